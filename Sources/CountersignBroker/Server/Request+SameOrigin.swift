import CountersignCore
import HTTPTypes
import Hummingbird

extension Request {
    /// Refuses (403 `csrf`) a request that a page of another site made:
    /// whichever of `Sec-Fetch-Site` and `Origin` is sent must say this
    /// site (``SameOriginRule``).
    func requireSameOrigin(_ origins: Set<Origin>, _ refusal: String) throws {
        guard SameOriginRule.allows(fetchSite: headers[.secFetchSite], origin: headers[.origin], origins: origins)
        else { throw APIError.forbidden(.csrf, refusal) }
    }
}
