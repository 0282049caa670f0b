import CountersignCore
import HTTPTypes
import Hummingbird

extension Request {
    /// Refuses (403 `csrf`) a request that a page of another site made.
    /// Browsers say where a request came from in `Sec-Fetch-Site`, which
    /// decides when sent; otherwise `Origin` must be one of `origins`. A
    /// form post from a page whose referrer policy is `no-referrer` carries
    /// `Origin: null` (Fetch, "append a request Origin header"), which only
    /// `Sec-Fetch-Site` can vouch for.
    func requireSameOrigin(_ origins: Set<Origin>, _ refusal: String) throws {
        let refused = APIError.forbidden(.csrf, refusal)
        if let site = headers[.secFetchSite] {
            guard site == "same-origin" else { throw refused }
            return
        }
        if let origin = headers[.origin] {
            guard let parsed = Origin(url: origin), origins.contains(parsed) else { throw refused }
        }
    }
}
