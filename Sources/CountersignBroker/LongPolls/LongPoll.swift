import CountersignCore
import CountersignStore
import Foundation
import ServiceLifecycle

/// Holding a request until an event settles.
struct LongPoll {
    let environment: BrokerEnvironment

    /// Event `id`, held up to `wait` seconds until it settles, in the one
    /// order that misses no decision: listen on the event's key, read it
    /// (`read`, which also refuses a caller who may not see it), claim the
    /// hold for `holder` (a newer poll of the same holder ends this one),
    /// then wait. With no wait, one read.
    func event(_ id: String, wait: TimeInterval, holder: String, read: () async throws -> ApprovalEvent)
        async throws -> ApprovalEvent
    {
        let subscription = wait > 0 ? environment.hub.subscribe([WakeHub.eventKey(id)]) : nil
        let event = try await read()
        subscription?.claim(holder: holder)
        return try await awaitSettled(event, wait: wait, subscription: subscription)
    }

    /// Returns the event once settled, expired, or when `wait` runs out.
    /// `subscription` listens on the event's key and was opened before
    /// `event` was read.
    ///
    /// The hold is measured on the monotonic clock; expiry on the broker's
    /// clock, which tests move by hand.
    private func awaitSettled(_ event: ApprovalEvent, wait: TimeInterval, subscription: WakeHub.Subscription?)
        async throws -> ApprovalEvent
    {
        guard let subscription else { return event }
        let holdEnds = ContinuousClock.now + .milliseconds(Int64(wait * 1000))
        // The event lives in a box, read only outside this frame, while the
        // request is parked: a parked poll keeps its connection task's async
        // frames (see docs/benchmarks.md), and an event is some 370 bytes.
        let latest = Latest(event)
        var state = latest.state(at: environment.now())
        // On shutdown the held request is answered with the event as it is;
        // the client polls again, through another instance.
        while !state.settled, !Task.isCancelled, !Task.isShuttingDownGracefully {
            let hold = holdEnds - ContinuousClock.now
            guard hold > .zero else { break }
            let notified = await subscription.wait(timeout: min(hold, state.untilExpiry))
            // A newer poll of the same caller took this one's place.
            if subscription.isReplaced { break }
            guard let reread = try await reread(latest) else { break }
            state = reread
            if let notified, state.settled {
                environment.metrics.woke(after: ContinuousClock.now - notified)
            }
        }
        return latest.event
    }

    private final class Latest {
        /// Whether the event is settled, and how long until it expires.
        typealias State = (settled: Bool, untilExpiry: Duration)

        var event: ApprovalEvent
        @inline(never) init(_ event: ApprovalEvent) { self.event = event }

        @inline(never) func state(at now: Date) -> State {
            (event.isSettled(at: now), .milliseconds(Int64(event.expiresAt.timeIntervalSince(now) * 1000) + 1))
        }
    }

    /// Reads the event again into `latest`; nil if it is gone. While the
    /// store cannot be read (a database restarting), the poll goes on
    /// holding with the event as last read: it answers with that when its
    /// hold ends, and the wake that comes when the store is back (a resync)
    /// reads it again.
    @inline(never)
    private func reread(_ latest: Latest) async throws -> Latest.State? {
        do {
            guard let event = try await environment.store.event(id: latest.event.id) else { return nil }
            latest.event = event
        } catch let error as StoreError where error.code == .backend {
            // Logged by the store, once for the outage.
        }
        return latest.state(at: environment.now())
    }
}
