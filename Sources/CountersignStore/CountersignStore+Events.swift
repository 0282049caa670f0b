public import CountersignCore
public import Foundation

/// The changes of events that take more than one event's row, written once
/// above every store: each is a rule of Core applied in a store's updater.
extension CountersignStore {
    /// Rejects a pending event as fraud ("this wasn't me"), in one
    /// transaction: the same conditions and spent id as
    /// ``settleEvent(id:decision:now:)`` (`decision.status` is `rejected`),
    /// its reason `fraud_reported`; every other pending, unexpired event of
    /// the user is rejected too (reason `user_protected`, no deciding
    /// device), and the user is protected until `protectUntil` (or later,
    /// if an earlier report said so): ``insertPendingEvent`` refuses
    /// requesters' events for them with `userProtected` until then.
    public func reportFraud(id: String, decision: RecordedDecision, protectUntil: Date, now: Date) async throws
        -> FraudReport
    {
        try await reportFraud(id: id, decision: decision, now: now) { reported, pending, running in
            FraudProtection.report(reported, pending: pending, requested: protectUntil, running: running, now: now)
        }
    }
}
