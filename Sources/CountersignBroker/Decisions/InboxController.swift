import CountersignCore
import CountersignStore
import Crypto
import Foundation
import Hummingbird
import ServiceLifecycle

/// A trusted device's view: the pending events it may decide.
struct InboxController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<DeviceReaderContext> {
        RouteCollection(context: DeviceReaderContext.self)
            .get("inbox", use: inbox)
            .get("inbox/:id", use: event)
    }

    struct Inbox: Encodable, Sendable, WireJSONWritable {
        let events: [InboxItem]
        /// Names this set of pending events, for the next poll's `state`.
        let state: String
        /// The longest this broker holds a poll (`--max-wait`), in seconds:
        /// what a device asks for, as long as nothing between it and the
        /// broker cuts a request off sooner.
        let hold: Int

        func write(to object: inout WireJSON.Object) {
            object.field("events", events)
            object.field("hold", hold)
            object.field("state", state)
        }
    }

    /// Pending events of the device's user; held up to `?wait=N` seconds
    /// while they are the set `?state=` names (an earlier answer's
    /// `state`), or while there are none: an event added, or one ending
    /// (decided, withdrawn, rejected by a report, expired), answers at once.
    @Sendable func inbox(_ request: Request, context: DeviceReaderContext) async throws -> JSONBody<Inbox> {
        let wait = try request.waitSeconds(max: environment.policy.maxWait)
        let known = try InboxState.known(in: request)
        // Listening before the first read, so an event created after it is not missed.
        let subscription =
            wait > 0
            ? environment.hub.subscribe([
                WakeHub.inboxKey(issuer: context.device.issuer, user: context.device.clientUserID)
            ]) : nil
        subscription?.claim(holder: "device/" + context.device.id)
        var pending = try await pendingEvents(of: context.device)
        var state = InboxState.of(pending)
        if let subscription, state == known {
            (pending, state) = try await hold(
                subscription, from: pending, state: state,
                until: ContinuousClock.now + .milliseconds(Int64(wait * 1000)), context)
        }
        return JSONBody(inbox(pending, state: state, context))
    }

    /// One event of the device's user, whatever its state: an approver
    /// asked to answer it learns at once that it was withdrawn, decided
    /// or has expired, instead of waiting for it in the inbox. Another
    /// user's event is not found, as an unknown one.
    @Sendable func event(_ request: Request, context: DeviceReaderContext) async throws -> JSONBody<EventDocument> {
        let id = try context.parameters.require("id")
        guard let event = try await environment.store.event(id: id), event.isAnswered(by: context.device) else {
            throw APIError.notFound("no such event")
        }
        return JSONBody(EventDocument(event, now: environment.now(), signature: nil).forApprovers())
    }

    /// Waits until the pending events are no longer the set `shown`, or
    /// the end of the hold. Woken by every change of the user's
    /// events; the first expiry among them is a change too, which nobody
    /// writes, so the wait ends then at the latest.
    ///
    /// Kept apart from the rest of the handler, and the reads apart from
    /// it: a parked poll keeps its connection task's async frames (see
    /// docs/benchmarks.md), and these are the ones on top.
    @inline(never)
    private func hold(
        _ subscription: WakeHub.Subscription, from shown: [ApprovalEvent], state known: String,
        until holdEnds: ContinuousClock.Instant, _ context: DeviceReaderContext
    ) async throws -> ([ApprovalEvent], state: String) {
        var pending = shown
        var current = known
        repeat {
            let firstExpiry = pending.map(\.expiresAt).min() ?? .distantFuture
            let hold = holdEnds - ContinuousClock.now
            guard hold > .zero, !Task.isCancelled, !Task.isShuttingDownGracefully else { break }
            let untilExpiry = max(0, firstExpiry.timeIntervalSince(environment.now()))
            let notified = await subscription.wait(
                timeout: min(hold, .milliseconds(Int64((min(untilExpiry, 86_400) * 1000).rounded(.up)) + 1)))
            // A newer poll of the same device took this one's place.
            if subscription.isReplaced { break }
            pending = try await pendingEventsOfUnrevoked(context)
            current = InboxState.of(pending)
            if let notified, current != known {
                environment.metrics.inboxWoke(after: ContinuousClock.now - notified)
            }
        } while current == known
        return (pending, current)
    }

    /// The pending events again after a wake-up; a device revoked while it
    /// waited gets nothing more, one suspended meanwhile an empty inbox.
    @inline(never)
    private func pendingEventsOfUnrevoked(_ context: DeviceReaderContext) async throws -> [ApprovalEvent] {
        guard let device = try await environment.store.device(id: context.device.id), device.revokedAt == nil else {
            throw APIError.deviceRevoked
        }
        return try await pendingEvents(of: device)
    }

    private func inbox(_ pending: [ApprovalEvent], state: String, _ context: DeviceReaderContext) -> Inbox {
        Inbox(
            events: pending.map {
                InboxItem(
                    event: EventDocument($0, now: environment.now(), signature: nil).forApprovers(),
                    app: context.apiKey.name,
                    nonce: $0.nonce, matchRequired: $0.matchNumber != nil, matchDigits: $0.matchNumber?.count,
                    newDevice: $0.newDevice.map(NewDeviceSummary.init))
            }, state: state, hold: Int(environment.policy.maxWait))
    }

    /// The user's pending events; none for a suspended device, which can
    /// answer none of them.
    @inline(never)
    private func pendingEvents(of device: TrustedDevice) async throws -> [ApprovalEvent] {
        guard device.suspendedAt == nil else { return [] }
        return try await environment.store.inboxEvents(
            issuer: device.issuer, clientUserID: device.clientUserID, now: environment.now(), limit: 20
        ).reversed()
    }
}

/// Names a set of pending events (with a quorum's approvals so far), so
/// that a poll can be held while the set it was last given stays the same:
/// 15 characters of base64url of the
/// SHA-256 of the ids in order (short enough for Swift to keep inline).
enum InboxState {
    /// The set `?state=` names; without it, the empty set (held while none
    /// is pending, as before states existed).
    static func known(in request: Request) throws -> String {
        guard let state = request.uri.queryParameters["state"].map(String.init) else { return none }
        guard state.utf8.count <= 64 else {
            throw APIError.badRequest("state is an earlier inbox answer's state, 15 characters")
        }
        return state
    }

    /// The empty set's.
    static let none = of([])

    static func of(_ pending: [ApprovalEvent]) -> String {
        var hash = SHA256()
        for event in pending {
            // A quorum's approvals so far show in the inbox: one more is a change.
            let approvals = event.quorum == nil ? "" : "/" + String(event.approvals.count)
            hash.update(data: Data((event.id + approvals + "\n").utf8))
        }
        return Base64URL.encode(hash.finalize().prefix(11))
    }
}
