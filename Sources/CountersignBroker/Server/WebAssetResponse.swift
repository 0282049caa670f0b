import CountersignApprover
import HTTPTypes
import Hummingbird
import NIOCore

/// A file of a page the broker serves (the web approver, the console),
/// under the page's content security policy.
enum WebAssetResponse {
    static func serve(_ asset: WebAsset?, _ request: Request, policy: String = strictPolicy) -> Response {
        guard let asset else {
            return Response(
                status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: "Not found\n")))
        }
        var headers: HTTPFields = [
            .contentType: asset.contentType,
            // Checked on every load, so that a new broker's page is used at
            // once; unchanged files cost a 304.
            .cacheControl: "no-cache",
            .eTag: asset.etag,
            .contentSecurityPolicy: policy,
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

    /// The console's policy: its own scripts, styles and images only, and
    /// requests to this broker only; no inline code, no framing, no forms.
    /// A value that slipped into the page as markup could neither run nor
    /// send anything anywhere.
    static let strictPolicy = [
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'",
        "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
    ].joined(separator: "; ")
}
