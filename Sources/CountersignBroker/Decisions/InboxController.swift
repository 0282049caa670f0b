import CountersignCore
import CountersignStore
import Foundation
import Hummingbird
import ServiceLifecycle

/// A trusted device's view: the pending events it may decide.
struct InboxController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<DeviceRequestContext> {
        RouteCollection(context: DeviceRequestContext.self)
            .get("inbox", use: inbox)
            .get("inbox/:id", use: event)
    }

    struct Inbox: Encodable, Sendable, WireJSONWritable {
        let events: [InboxItem]

        func write(to object: inout WireJSON.Object) { object.field("events", events) }
    }

    /// Pending events of the device's user; held up to `?wait=N` seconds
    /// while there are none.
    @Sendable func inbox(_ request: Request, context: DeviceRequestContext) async throws -> JSONBody<Inbox> {
        let wait = try request.waitSeconds(max: environment.policy.maxWait)
        // Listening before the first read, so an event created after it is not missed.
        let subscription =
            wait > 0
            ? environment.hub.subscribe([
                WakeHub.inboxKey(issuer: context.device.issuer, user: context.device.clientUserID)
            ]) : nil
        subscription?.claim(holder: "device/" + context.device.id)
        var pending = try await pendingEvents(context)
        if let subscription, pending.isEmpty {
            pending = try await hold(
                subscription, until: ContinuousClock.now + .milliseconds(Int64(wait * 1000)), context)
        }
        return JSONBody(inbox(pending, context))
    }

    /// One event of the device's user, whatever its state: an approver
    /// asked to answer it learns at once that it was withdrawn, decided
    /// or has expired, instead of waiting for it in the inbox. Another
    /// user's event is not found, as an unknown one.
    @Sendable func event(_ request: Request, context: DeviceRequestContext) async throws -> JSONBody<EventDocument> {
        let id = try context.parameters.require("id")
        guard let event = try await environment.store.event(id: id),
            context.device.belongs(toIssuer: event.issuer, user: event.clientUserID)
        else { throw APIError.notFound("no such event") }
        return JSONBody(EventDocument(event, now: environment.now(), signature: nil))
    }

    /// Waits for the first pending event, or the end of the hold.
    ///
    /// Kept apart from the rest of the handler, and the reads apart from
    /// it: a parked poll keeps its connection task's async frames (see
    /// docs/benchmarks.md), and these are the ones on top.
    @inline(never)
    private func hold(
        _ subscription: WakeHub.Subscription, until holdEnds: ContinuousClock.Instant, _ context: DeviceRequestContext
    ) async throws -> [ApprovalEvent] {
        var pending: [ApprovalEvent] = []
        while pending.isEmpty, !Task.isCancelled, !Task.isShuttingDownGracefully {
            let hold = holdEnds - ContinuousClock.now
            guard hold > .zero else { break }
            await subscription.wait(timeout: hold)
            // A newer poll of the same device took this one's place.
            if subscription.isReplaced { break }
            pending = try await pendingEventsOfUnrevoked(context)
        }
        return pending
    }

    /// The pending events again after a wake-up; a device revoked while it
    /// waited gets nothing more.
    @inline(never)
    private func pendingEventsOfUnrevoked(_ context: DeviceRequestContext) async throws -> [ApprovalEvent] {
        try Self.requireUnrevoked(await environment.store.device(id: context.device.id))
        return try await pendingEvents(context)
    }

    @inline(never)
    private static func requireUnrevoked(_ device: TrustedDevice?) throws {
        guard device?.revokedAt == nil else { throw APIError.deviceRevoked }
    }

    private func inbox(_ pending: [ApprovalEvent], _ context: DeviceRequestContext) -> Inbox {
        Inbox(
            events: pending.map {
                InboxItem(
                    event: EventDocument($0, now: environment.now(), signature: nil), app: context.apiKey.name,
                    nonce: $0.nonce, matchRequired: $0.matchNumber != nil, matchDigits: $0.matchNumber?.count,
                    newDevice: $0.newDevice.map(NewDeviceSummary.init))
            })
    }

    @inline(never)
    private func pendingEvents(_ context: DeviceRequestContext) async throws -> [ApprovalEvent] {
        try await environment.store.events(
            issuer: context.device.issuer, clientUserID: context.device.clientUserID, status: .pending,
            now: environment.now(), limit: 20
        ).reversed()
    }
}
