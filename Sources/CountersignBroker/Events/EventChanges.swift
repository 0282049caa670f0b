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

    /// A new event: a pending one appears in the user's inboxes (nobody
    /// can wait on the event itself yet).
    func created(_ event: ApprovalEvent) {
        if event.storedStatus == .pending {
            wakeInboxes(of: event)
        } else {
            environment.metrics.decided(event)
        }
        environment.metrics.created(event)
    }

    /// Events a write changed (decided, withdrawn, rejected by a report,
    /// a wrong number counted). Its waiters re-read it; the inboxes only
    /// when it left them (a wrong number leaves the pending set as it is).
    func changed(_ events: [ApprovalEvent]) {
        let now = environment.now()
        for event in events {
            environment.hub.notify(WakeKey.event(event.id))
            if event.status(at: now) != .pending { wakeInboxes(of: event) }
            if event.storedStatus != .pending { environment.metrics.decided(event) }
        }
    }

    func changed(_ event: ApprovalEvent) { changed([event]) }

    private func wakeInboxes(of event: ApprovalEvent) {
        environment.hub.notify(WakeKey.inbox(issuer: event.issuer, user: event.clientUserID))
    }
}
