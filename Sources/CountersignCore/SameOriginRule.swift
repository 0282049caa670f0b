/// Whether a browser's request came from one of the broker's own pages,
/// by what the browser says of it: each of `Sec-Fetch-Site` and `Origin`
/// that is sent must agree, so a foreign `Origin` is refused whatever
/// `Sec-Fetch-Site` claims. A request with neither is no browser's
/// cross-site request, and passes. A form post from a page whose referrer
/// policy is `no-referrer` carries `Origin: null` (Fetch, "append a
/// request Origin header"): only `Sec-Fetch-Site: same-origin` vouches
/// for it.
public enum SameOriginRule {
    public static func allows(fetchSite: String?, origin: String?, origins: Set<Origin>) -> Bool {
        if let fetchSite, fetchSite != "same-origin" { return false }
        guard let origin else { return true }
        if origin == "null" { return fetchSite == "same-origin" }
        guard let parsed = Origin(url: origin) else { return false }
        return origins.contains(parsed)
    }
}
