import CountersignApprover
import HTTPTypes
import Hummingbird
import NIOCore

/// Serves the web approver under `/approve/` (its service worker's scope),
/// with a policy that lets the page run only its own scripts and talk only
/// to this broker.
struct ApproverController {
    /// No inline script or style, nothing from another origin, no framing,
    /// no forms posting anywhere: a string a requester wrote that slipped
    /// into the page as markup still could not run or send anything.
    static let contentSecurityPolicy = [
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'",
        "manifest-src 'self'", "worker-src 'self'", "base-uri 'none'", "form-action 'none'",
        "frame-ancestors 'none'",
    ].joined(separator: "; ")

    func register(on router: RouterGroup<BrokerRequestContext>) {
        // Someone who opens the broker's own URL: where to go from here.
        router.get("/") { _, _ in
            Response(
                status: .ok,
                headers: [
                    .contentType: "text/html; charset=utf-8", .contentSecurityPolicy: "default-src 'none'",
                    .cacheControl: "no-cache", HTTPField.Name("X-Content-Type-Options")!: "nosniff",
                ],
                body: .init(byteBuffer: ByteBuffer(string: Self.landingPage)))
        }
        // The router takes /approve and /approve/ for one path; the page
        // lives at /approve/, its service worker's scope, where its
        // relative links resolve, and the bare path moves there.
        router.get("approve") { request, _ in
            guard request.uri.path.hasSuffix("/") else {
                return Response(
                    status: .movedPermanently, headers: [.location: "/approve/", .cacheControl: "no-cache"])
            }
            return Self.serve("index.html", request)
        }
        router.get("approve/:file") { request, context in
            Self.serve(try context.parameters.require("file"), request)
        }
    }

    static let landingPage = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Countersign</title></head>
        <body>
        <h1>Countersign</h1>
        <p>This is a Countersign broker. To approve sign-in requests on this phone or computer, \
        open the <a href="/approve/">web approver</a>.</p>
        <p>For app developers: the REST API is under <code>/api/v1</code>, described by \
        <code>proto/openapi.yaml</code> in Countersign's source; OpenID discovery is at \
        <a href="/.well-known/openid-configuration">/.well-known/openid-configuration</a>, \
        the signing keys at <a href="/.well-known/jwks.json">/.well-known/jwks.json</a>, \
        and health at <a href="/healthz">/healthz</a>.</p>
        </body></html>

        """

    static func serve(_ name: String, _ request: Request) -> Response {
        WebAssetResponse.serve(ApproverAssets.files[name], request, policy: contentSecurityPolicy)
    }
}
