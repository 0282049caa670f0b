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

    static func serve(_ name: String, _ request: Request) -> Response {
        guard let asset = ApproverAssets.files[name] else {
            return Response(
                status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: "Not found\n")))
        }
        var headers: HTTPFields = [
            .contentType: asset.contentType,
            // Checked on every load, so that a new broker's approver is
            // used at once; unchanged files cost a 304.
            .cacheControl: "no-cache",
            .eTag: asset.etag,
            .contentSecurityPolicy: contentSecurityPolicy,
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
            HTTPField.Name("Cross-Origin-Opener-Policy")!: "same-origin",
            HTTPField.Name("Permissions-Policy")!: "camera=(), microphone=(), geolocation=()",
        ]
        if request.headers[.ifNoneMatch] == asset.etag {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentLength] = String(asset.bytes.count)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: asset.bytes)))
    }
}
