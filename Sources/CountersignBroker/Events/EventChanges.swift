import CountersignCore
import CountersignStore

/// What follows every change of an event, written once: whoever shows it
/// hears of it. The event's own waiters (its requester, its backend) and
/// every inbox of its user's devices are woken on this instance, and the
/// metrics counted. Other instances hear it from the store (PostgreSQL
/// sends the same keys with `NOTIFY` in the change's transaction).
///
/// Flows call this after their store write; none wakes anyone itself.
struct EventChanges {
    let environment: BrokerEnvironment

    /// A new event: pending ones appear in the user's inboxes.
    func created(_ event: ApprovalEvent) {
        wake(event)
        environment.metrics.created(event)
        if event.storedStatus != .pending { environment.metrics.decided(event) }
    }

    /// Events a write changed (decided, withdrawn, rejected by a report,
    /// a wrong number counted): they leave or change in every inbox.
    func changed(_ events: [ApprovalEvent]) {
        for event in events {
            wake(event)
            if event.storedStatus != .pending { environment.metrics.decided(event) }
        }
    }

    func changed(_ event: ApprovalEvent) { changed([event]) }

    private func wake(_ event: ApprovalEvent) {
        environment.hub.notify(WakeKey.event(event.id))
        environment.hub.notify(WakeKey.inbox(issuer: event.issuer, user: event.clientUserID))
    }
}
