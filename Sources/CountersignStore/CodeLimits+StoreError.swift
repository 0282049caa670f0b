public import CountersignCore
public import Foundation

/// The code-attempt rule (``CodeLimits``) as the store contract's errors,
/// for the stores to throw from inside their transactions.
extension CodeLimits {
    /// Throws `limitReached` while a lock-out (`lockedUntil`, as stored) runs.
    public func refuseWhileLocked(until lockedUntil: Date?, now: Date) throws {
        if let seconds = lockedFor(until: lockedUntil, now: now) {
            throw StoreError(.limitReached(retryAfter: seconds), "too many wrong codes")
        }
    }

    /// The attempts `event` takes after one more, or the error
    /// ``CountersignStore/reserveCodeAttempt(issuer:clientUserID:eventID:limits:now:)``
    /// throws instead: a refusal by the event's own state or limit carries
    /// the event; the user's lock-out does not.
    public func attemptsLeft(
        after event: ApprovalEvent?, id: String, issuer: String, clientUserID: String, now: Date
    ) throws -> Int {
        switch attempt(on: event, issuer: issuer, clientUserID: clientUserID, now: now) {
        case .counted(let left): return left
        case .refused(.unknownEvent): throw StoreError(.notFound, "no event \(id) for this user")
        case .refused(.notPending): throw StoreError(.conflict, "event \(id) is no longer pending", event: event)
        case .refused(.exhausted(let retryAfter)):
            throw StoreError(.limitReached(retryAfter: retryAfter), "the event takes no more codes", event: event)
        }
    }
}
