public import CountersignCore
public import Foundation

/// The part of ``CountersignStore`` that keeps what the broker sends to
/// others: VAPID keys and push subscriptions, the outbox, and webhook
/// endpoints. The same contract holds: atomic methods, time passed in,
/// ``StoreError`` codes as documented there.
public protocol CountersignOutboxStore: Sendable {
    // MARK: Push notifications and the outbox

    /// The broker's VAPID keys (RFC 8292), oldest first.
    func vapidKeys() async throws -> [BrokerSigningKey]
    /// Adds a VAPID key; `alreadyExists` if the id is taken.
    func insertVAPIDKey(_ key: BrokerSigningKey) async throws
    /// Deletes a VAPID key and, in the same transaction, every push
    /// subscription made with it (their devices subscribe again with a
    /// current key); returns how many subscriptions went. `notFound` for an
    /// unknown id, `conflict` for the newest key (rotate first).
    @discardableResult
    func retireVAPIDKey(id: String) async throws -> Int

    /// Replaces a device's push subscription, or with nil removes it.
    /// `notFound` for an unknown device, `conflict` for a revoked one (a
    /// revoked device has none: revoking removes it).
    func setPushSubscription(_ subscription: PushSubscription?, deviceID: String) async throws
    /// Removes a device's subscription if it still has this endpoint (its
    /// push service said the subscription is gone); whether it did.
    @discardableResult
    func removePushSubscription(deviceID: String, endpoint: String) async throws -> Bool

    /// Claims up to `limit` queued messages due at `now` (their next
    /// attempt time reached, no lease running), the longest due first, for
    /// `lease` seconds under `claim` (a new random token per call). Two
    /// callers, in any instances, never hold one message at once.
    ///
    /// No receiver (``OutboxMessage/receiver``) gets more than its
    /// `share`: the caller's attempts in flight to it and the messages
    /// claimed for it together stay within ``OutboxShare/perReceiver``, and
    /// a receiver at its share is passed over for the next due messages.
    func claimOutboxMessages(limit: Int, lease: TimeInterval, claim: String, now: Date, share: OutboxShare)
        async throws -> [ClaimedOutboxMessage]
    /// Records one attempt of a message claimed with `claim`: counts it and
    /// applies `outcome` (queued again for a retry, or finished at `now`).
    /// `conflict` and nothing changes if the message is no longer queued
    /// or was claimed anew since; `notFound` for an unknown id.
    func finishOutboxAttempt(id: String, claim: String, outcome: OutboxOutcome, now: Date) async throws
    /// Outbox messages, newest first, at most `limit`; with `state`, those
    /// in it.
    func outboxMessages(state: OutboxMessage.State?, limit: Int) async throws -> [OutboxMessage]

    /// Requeues a failed message for another round of attempts from `now`
    /// (as long as a new message has), keeping its id; `conflict` unless it
    /// failed, `notFound` for an unknown id. Returns it as requeued.
    func resendOutboxMessage(id: String, now: Date) async throws -> OutboxMessage
    /// The outbox message with this id, or nil.
    func outboxMessage(id: String) async throws -> OutboxMessage?
    /// The messages to these targets, newest first (ties by id, in byte
    /// order), at most `limit`; with `state`, those in it; with `before`,
    /// those after that place.
    func outboxMessages(targets: [String], state: OutboxMessage.State?, before: PageCursor?, limit: Int)
        async throws -> [OutboxMessage]
    /// How many messages to these targets (to any, for nil) are in
    /// `state`, counted up to `cap`.
    func outboxMessageCount(targets: [String]?, state: OutboxMessage.State, cap: Int) async throws -> Int

    // MARK: Webhooks

    /// Marks up to `limit` events whose window ran out by `now` with no
    /// answer (not withdrawn) as announced, and writes their
    /// `event.expired` notices, in one transaction; each event once, by
    /// whichever instance gets to it first. Returns how many.
    @discardableResult
    func announceExpiredEvents(now: Date, limit: Int) async throws -> Int

    /// Adds an endpoint; `notFound` for an unknown or revoked API key,
    /// `alreadyExists` if its id is taken.
    func insertWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws
    /// The endpoint with this id, or nil.
    func webhookEndpoint(id: String) async throws -> WebhookEndpoint?
    /// An API key's endpoints, oldest first, disabled ones too.
    func webhookEndpoints(apiKeyID: String) async throws -> [WebhookEndpoint]
    /// Writes an endpoint's URL, types, secrets and disabled state as
    /// given; `notFound` for an unknown id.
    func updateWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws
    /// Deletes an endpoint and cancels its queued messages; `notFound` for
    /// an unknown id.
    func deleteWebhookEndpoint(id: String, now: Date) async throws
    /// Records how an attempt to an endpoint went, in one transaction as
    /// ``WebhookHealth`` decides: a delivery clears its failures, a failure
    /// counts from the first one, and a failure past the limit disables it.
    /// Returns the change; nil for an unknown endpoint.
    @discardableResult
    func recordWebhookAttempt(endpointID: String, delivered: Bool, reason: String, now: Date) async throws
        -> WebhookHealth.Change?
}

extension CountersignOutboxStore {
    /// The newest messages to these targets, at most `limit`.
    public func outboxMessages(targets: [String], state: OutboxMessage.State?, limit: Int) async throws
        -> [OutboxMessage]
    {
        try await outboxMessages(targets: targets, state: state, before: nil, limit: limit)
    }
}

extension CountersignOutboxStore {
    /// Claims without a share per receiver (the oldest due first, whoever
    /// they go to).
    public func claimOutboxMessages(limit: Int, lease: TimeInterval, claim: String, now: Date) async throws
        -> [ClaimedOutboxMessage]
    {
        try await claimOutboxMessages(
            limit: limit, lease: lease, claim: claim, now: now, share: OutboxShare(perReceiver: limit, inFlight: [:]))
    }
}

/// How a claim shares the outbox among receivers: at most `perReceiver`
/// attempts to each at a time, counting the caller's attempts `inFlight`
/// (by ``OutboxMessage/receiver``).
public struct OutboxShare: Sendable, Equatable {
    public var perReceiver: Int
    public var inFlight: [String: Int]

    public init(perReceiver: Int, inFlight: [String: Int]) {
        self.perReceiver = perReceiver
        self.inFlight = inFlight
    }

    /// How many due messages a claim of `limit` reads (and on PostgreSQL
    /// locks) at most to fill its slots: twice `limit`, so that a few
    /// receivers' backlogs at the head leave room for others'. A claim cut
    /// short by a share is followed by another at once, which passes over
    /// the receivers that reached theirs.
    public func candidates(limit: Int) -> Int { perReceiver >= limit ? limit : 2 * limit }

    /// The attempts in flight as a JSON array of `{receiver, n}`, the
    /// stores' statement parameter.
    public var inFlightJSON: String {
        struct Entry: Encodable {
            let receiver: String
            let n: Int
        }
        let entries = inFlight.filter { $0.value > 0 }.map { Entry(receiver: $0.key, n: $0.value) }
        return String(decoding: (try? JSONEncoder().encode(entries)) ?? Data("[]".utf8), as: UTF8.self)
    }
}
