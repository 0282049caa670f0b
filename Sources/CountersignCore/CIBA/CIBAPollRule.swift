public import Foundation

/// What a token request for a CIBA `auth_req_id` gets (CIBA Core 1.0 §11),
/// decided from the request and its event as stored: the stores apply the
/// returned request state in the same transaction they read it in.
public enum CIBAPollRule {
    /// How much `interval` grows on each `slow_down` (as RFC 8628 §3.5 has it).
    public static let slowDownStep = 5
    /// The interval a new request starts with.
    public static let initialInterval = 2
    /// `requested_expiry` the broker accepts, in seconds.
    public static let expiryRange = 10...600

    public enum Outcome: Sendable, Equatable {
        /// Not decided yet; the next poll is allowed from the request's `nextPollAt`.
        case pending(CIBARequest)
        /// Polled before `nextPollAt`: the interval grows.
        case slowDown(CIBARequest)
        /// Approved: issue tokens; the request is marked redeemed.
        case issue(CIBARequest)
        /// Rejected by the user or by a fraud report.
        case denied
        /// Nobody answered in time, or the client withdrew it.
        case expired
        /// Tokens were issued for it already.
        case redeemed
    }

    public static func poll(_ request: CIBARequest, status: EventStatus, now: Date) -> Outcome {
        if request.redeemedAt != nil { return .redeemed }
        switch status {
        case .approved:
            var next = request
            next.redeemedAt = now
            return .issue(next)
        case .rejected:
            return .denied
        case .expired:
            return .expired
        case .pending:
            var next = request
            if now < request.nextPollAt {
                next.interval += slowDownStep
                next.nextPollAt = now + TimeInterval(next.interval)
                return .slowDown(next)
            }
            next.nextPollAt = now + TimeInterval(request.interval)
            return .pending(next)
        }
    }
}
