import CountersignCore
public import Foundation

/// The changes of a CIBA request, written once above every store: Core's
/// rule (``CIBAPollRule``) applied in the store's updater,
/// ``CountersignStore/updateCIBARequest(eventID:_:)``.
extension CountersignStore {
    /// A token request's poll of a CIBA request: ``CIBAPollRule`` decides
    /// from the request and its event as they stand, and the request state
    /// it returns is written in the same transaction, so two polls at once
    /// cannot both be issued tokens. Throws `notFound` without a request.
    /// Gives the event it decided from, too: tokens are issued for it.
    public func pollCIBARequest(eventID: String, now: Date) async throws -> CIBAPoll {
        try await updateCIBARequest(eventID: eventID) { request, event in
            let outcome = CIBAPollRule.poll(request, status: event.status(at: now), now: now)
            switch outcome {
            case .pending(let next), .slowDown(let next), .issue(let next):
                return (next, CIBAPoll(outcome: outcome, event: event))
            case .denied, .expired, .redeemed:
                return (nil, CIBAPoll(outcome: outcome, event: event))
            }
        }
    }
}
