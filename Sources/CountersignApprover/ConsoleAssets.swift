/// The operator's console's files (`Console/`), as the broker serves them
/// under `/console/`: plain HTML, CSS and JavaScript, no build step.
public enum ConsoleAssets {
    /// The files by name; `index.html` is the page itself.
    public static let files: [String: WebAsset] = [
        "index.html": WebAsset(PackageResources.console_html, "text/html; charset=utf-8"),
        "console.css": WebAsset(PackageResources.console_css, "text/css; charset=utf-8"),
        "console.js": WebAsset(PackageResources.console_js, "text/javascript; charset=utf-8"),
        "views.js": WebAsset(PackageResources.views_js, "text/javascript; charset=utf-8"),
        "manage.js": WebAsset(PackageResources.manage_js, "text/javascript; charset=utf-8"),
        "search.js": WebAsset(PackageResources.search_js, "text/javascript; charset=utf-8"),
        "invitations.js": WebAsset(PackageResources.invitations_js, "text/javascript; charset=utf-8"),
        // The web approver's icon: the same product in the tab.
        "favicon.svg": WebAsset(PackageResources.icon_svg, "image/svg+xml"),
    ]
}
