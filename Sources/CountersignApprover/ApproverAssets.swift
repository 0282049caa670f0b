/// The web approver's files (`Web/`), as the broker serves them under
/// `/approve/`: plain HTML, CSS and JavaScript, no build step.
public enum ApproverAssets {
    /// The files by name; `index.html` is the page itself.
    public static let files: [String: WebAsset] = [
        "index.html": WebAsset(PackageResources.index_html, "text/html; charset=utf-8"),
        "app.css": WebAsset(PackageResources.app_css, "text/css; charset=utf-8"),
        "app.js": WebAsset(PackageResources.app_js, "text/javascript; charset=utf-8"),
        "account.js": WebAsset(PackageResources.account_js, "text/javascript; charset=utf-8"),
        "broker.js": WebAsset(PackageResources.broker_js, "text/javascript; charset=utf-8"),
        "keys.js": WebAsset(PackageResources.keys_js, "text/javascript; charset=utf-8"),
        "passkeys.js": WebAsset(PackageResources.passkeys_js, "text/javascript; charset=utf-8"),
        "sw.js": WebAsset(PackageResources.sw_js, "text/javascript; charset=utf-8"),
        "manifest.webmanifest": WebAsset(PackageResources.manifest_webmanifest, "application/manifest+json"),
        "icon.svg": WebAsset(PackageResources.icon_svg, "image/svg+xml"),
        "icon-192.png": WebAsset(PackageResources.icon_192_png, "image/png"),
        "icon-512.png": WebAsset(PackageResources.icon_512_png, "image/png"),
    ]
}
