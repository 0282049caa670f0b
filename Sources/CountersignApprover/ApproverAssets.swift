import Crypto
import Foundation

/// The web approver's files (`Web/`), as the broker serves them under
/// `/approve/`: plain HTML, CSS and JavaScript, no build step.
public enum ApproverAssets {
    /// One file, with what its response needs.
    public struct Asset: Sendable {
        public let bytes: [UInt8]
        public let contentType: String
        /// A strong validator for `If-None-Match`: the files change only with the binary.
        public let etag: String

        init(_ bytes: [UInt8], _ contentType: String) {
            self.bytes = bytes
            self.contentType = contentType
            etag = "\"" + SHA256.hash(data: bytes).prefix(12).map { String(format: "%02x", $0) }.joined() + "\""
        }
    }

    /// The files by name; `index.html` is the page itself.
    public static let files: [String: Asset] = [
        "index.html": Asset(PackageResources.index_html, "text/html; charset=utf-8"),
        "app.css": Asset(PackageResources.app_css, "text/css; charset=utf-8"),
        "app.js": Asset(PackageResources.app_js, "text/javascript; charset=utf-8"),
        "account.js": Asset(PackageResources.account_js, "text/javascript; charset=utf-8"),
        "broker.js": Asset(PackageResources.broker_js, "text/javascript; charset=utf-8"),
        "keys.js": Asset(PackageResources.keys_js, "text/javascript; charset=utf-8"),
        "passkeys.js": Asset(PackageResources.passkeys_js, "text/javascript; charset=utf-8"),
        "sw.js": Asset(PackageResources.sw_js, "text/javascript; charset=utf-8"),
        "manifest.webmanifest": Asset(PackageResources.manifest_webmanifest, "application/manifest+json"),
        "icon.svg": Asset(PackageResources.icon_svg, "image/svg+xml"),
        "icon-192.png": Asset(PackageResources.icon_192_png, "image/png"),
        "icon-512.png": Asset(PackageResources.icon_512_png, "image/png"),
    ]
}
