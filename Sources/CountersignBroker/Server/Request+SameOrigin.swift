import CountersignCore
import HTTPTypes
import Hummingbird

extension Request {
    /// Refuses (403 `csrf`) a request that a page of another site made:
    /// browsers say where a request came from in `Sec-Fetch-Site` and
    /// `Origin`, and a change to the broker's own pages comes from them.
    func requireSameOrigin(_ origins: Set<Origin>, _ refusal: String) throws {
        let refused = APIError.forbidden("csrf", refusal)
        if let site = headers[.secFetchSite], site != "same-origin" { throw refused }
        if let origin = headers[.origin] {
            guard let parsed = Origin(url: origin), origins.contains(parsed) else { throw refused }
        }
    }
}
