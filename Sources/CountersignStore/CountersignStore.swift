public import CountersignCore
public import Foundation

/// Everything the broker keeps. Every implementation must pass the
/// conformance suite in `CountersignStoreTesting`; this is its contract.
///
/// - Every method is atomic: it happens entirely or not at all.
/// - Time is always passed in (`now`), never read from a clock, so expiry
///   is decided by the caller's clock and testable without sleeping.
/// - Missing things are `nil` from getters and ``StoreError/Code/notFound``
///   from writers; a duplicate identity is ``StoreError/Code/alreadyExists``.
/// - A conditional write whose condition fails throws
///   ``StoreError/Code/conflict`` and changes nothing.
/// - A method returns only after its write is durable as configured.
public protocol CountersignStore:
    CountersignOutboxStore, CountersignConsoleStore, CountersignOpenIDStore, CountersignRADIUSStore,
    CountersignDirectoryStore, CountersignCodeStore, CountersignInvitationStore, CountersignApproverGroupStore,
    CountersignQuorumPolicyStore, CountersignVerificationStore
{
    // MARK: API keys and signing keys

    /// Inserts a new API key, with its user-verification policy;
    /// `alreadyExists` if the id is taken.
    func insertAPIKey(_ key: APIKey) async throws
    /// The API key with this id, or nil; nil too once it is revoked, so
    /// that a revoked key is refused everywhere, by every instance, at once.
    func apiKey(id: String) async throws -> APIKey?
    /// All API keys, oldest first, revoked ones too.
    func apiKeys() async throws -> [APIKey]
    /// Gives an unrevoked key a new secret; the one it replaces is still
    /// taken until `previousUntil` (a previous one from an earlier rotation
    /// ends at once). Records `change` in the same transaction. `notFound`
    /// for an unknown or revoked key.
    func rotateAPIKeySecret(id: String, to digest: Data, previousUntil: Date, change: APIKeyChange) async throws
        -> APIKey
    /// Revokes a key at `change.at`, recording `change` in the same
    /// transaction; `notFound` for an unknown or revoked key.
    func revokeAPIKey(id: String, change: APIKeyChange) async throws -> APIKey
    /// Sets an unrevoked key's user-verification policy
    /// (``APIKey/userVerification``) and returns the key, recording `change`
    /// (``APIKeyChange/Action/setting(_:)``) in the same transaction, even
    /// when the key had that policy already; `notFound` for an unknown or
    /// revoked key, and nothing changes.
    func setUserVerification(_ policy: UserVerificationPolicy, apiKeyID: String, change: APIKeyChange) async throws
        -> APIKey
    /// Records a change made otherwise (a key's creation).
    func recordAPIKeyChange(_ change: APIKeyChange) async throws
    /// A key's changes, oldest first; never garbage-collected.
    func apiKeyChanges(id: String) async throws -> [APIKeyChange]

    /// Replaces the redirect URLs registered for an API key, keeping their
    /// order; `notFound` for an unknown key, `alreadyExists` for a URL given
    /// twice (then nothing changes).
    func setRedirectURLs(_ urls: [String], apiKeyID: String) async throws
    /// The redirect URLs registered for an API key, in the order given.
    func redirectURLs(apiKeyID: String) async throws -> [String]

    /// The broker's signing keys, oldest first.
    func signingKeys() async throws -> [BrokerSigningKey]
    /// Adds a signing key; `alreadyExists` if the id is taken.
    func insertSigningKey(_ key: BrokerSigningKey) async throws

    // MARK: Devices

    /// Stores an enrollment token.
    func insertEnrollmentToken(_ token: EnrollmentToken) async throws

    /// Enrolls `device` by consuming the enrollment token with this digest,
    /// in one transaction. The token must exist, be unused, unexpired at
    /// `now` and issued for the device's issuer and user, else `notFound`
    /// (no state changes, the token stays usable). `alreadyExists` if a
    /// device with the same key is enrolled (the token stays usable). The
    /// enrollment is recorded in the audit log with `author`.
    func enrollDevice(_ device: TrustedDevice, consumingToken digest: Data, author: ChangeAuthor, now: Date)
        async throws

    /// Enrolls `device` as its user's first trusted device (the user proved
    /// an email address or phone number instead of presenting a token), in
    /// one transaction: `conflict` if the user already has an unrevoked
    /// device, `alreadyExists` if the key is enrolled. Recorded in the audit
    /// log with `author`.
    func enrollFirstDevice(_ device: TrustedDevice, author: ChangeAuthor, now: Date) async throws

    /// The device with this id, revoked or not; nil if unknown.
    func device(id: String) async throws -> TrustedDevice?
    /// The device with this id, revoked or not, and its app's API key as
    /// ``apiKey(id:)`` reads it (nil once revoked), in one read: what a
    /// device's proof is checked against. Nil if the device is unknown.
    func deviceWithAPIKey(id: String) async throws -> (TrustedDevice, APIKey?)?
    /// The devices of one user, revoked ones included, oldest first.
    func devices(issuer: String, clientUserID: String) async throws -> [TrustedDevice]
    /// Revokes a device of this user at `now` and returns it; `notFound` if
    /// the user has no such device. Revoking twice keeps the first time and
    /// records nothing more; the first revocation is recorded in the audit
    /// log with `author`.
    func revokeDevice(id: String, issuer: String, clientUserID: String, author: ChangeAuthor, now: Date) async throws
        -> TrustedDevice
    /// A user's decisions, newest first, at most `limit`: every approval and
    /// rejection, written with it (``DecisionRecord``), never collected.
    func decisionRecords(issuer: String, clientUserID: String, limit: Int) async throws -> [DecisionRecord]
    /// The same, decided before `before` only: the console's older pages
    /// and its "what happened at 14:02".
    func decisionRecords(issuer: String, clientUserID: String, before: Date, limit: Int) async throws
        -> [DecisionRecord]
    /// A user's device audit log, newest first, at most `limit` entries.
    /// It outlives the devices and is never garbage-collected.
    func deviceChanges(issuer: String, clientUserID: String, limit: Int) async throws -> [DeviceChange]
    /// Records that the device was seen at `now`.
    func markDeviceSeen(id: String, now: Date) async throws

    /// Sets, or with nil removes, the passkey of an unrevoked device, and
    /// records the change by `author` (`passkey_added` or
    /// `passkey_removed`, with its webhook) in the same transaction:
    /// `notFound` for an unknown device, `conflict` for a revoked one,
    /// `alreadyExists` when another device holds that credential id (then
    /// nothing changes). Removing none changes and records nothing.
    /// Revoking a device removes its passkey.
    func setPasskey(_ passkey: Passkey?, deviceID: String, by author: ChangeAuthor, at now: Date) async throws
    /// Keeps `signCount` as the counter of the device's passkey
    /// `credentialID` if it goes past the one stored (or both are 0), as a
    /// decision's settling write does: `conflict` otherwise (the passkey
    /// changed, or another use counted as far meanwhile).
    func advancePasskeySignCount(deviceID: String, credentialID: String, to signCount: UInt32) async throws

    // MARK: Replay cache

    /// Records a proof or decision id (`jti`) of a device, kept until
    /// `expiresAt`; `replayed` if that device used it before.
    func consumeProofID(_ jti: String, deviceID: String, expiresAt: Date, now: Date) async throws

    // MARK: Events

    /// Inserts a pending event asked for by `requester`, unless the pending
    /// events unexpired at `now` that ``PendingCap`` counts it with are at a
    /// limit; then throws `limitReached(retryAfter:)` with the seconds until
    /// there is room. A requester's event for a user protected by a fraud
    /// report is refused with `userProtected(retryAfter:)`. Instances sharing the store share the limits: the
    /// count and the insert are one step for the user and the address.
    /// A requester's event is counted by its `ip`, which is the address;
    /// its rates (events created per user and per address within
    /// `limits.rateWindow`) by the minute counters ``RequestRate`` reads,
    /// which the insert adds to.
    ///
    /// `announcing` is written to the outbox in the same transaction (the
    /// pushes that tell the user's devices), or not at all.
    ///
    /// Every change to an event or a device writes its ``WebhookNotice``
    /// to the outbox in its transaction, one message per enabled endpoint
    /// of the app that wants its type. A store that is a ``WakeFeed`` also
    /// tells, at commit, the user's ``WakeKey/inbox(issuer:user:)`` of a
    /// pending event created, and both that and the event's
    /// ``WakeKey/event(_:)`` for every change of an event (decided,
    /// withdrawn, a wrong number counted).
    ///
    /// An event that needs a quorum is found by its approvers' inboxes
    /// (``inboxEvents(issuer:clientUserID:now:limit:)``), and wakes them.
    ///
    /// With `attached`, the OpenID request that asked for it (a CIBA
    /// client's, or a relying party's sign-in) is stored in the same
    /// transaction.
    func insertPendingEvent(
        _ event: ApprovalEvent, by requester: PendingRequester, limits: PendingLimits, announcing: [OutboxMessage],
        attached: PendingAttachment?, now: Date
    ) async throws
    /// Registers an API key as a CIBA client in ping mode, notified at
    /// `endpoint`; nil returns it to the poll mode. `notFound` for an
    /// unknown or revoked key.
    func setCIBANotificationEndpoint(_ endpoint: String?, apiKeyID: String, now: Date) async throws
    /// Where a ping-mode CIBA client is notified, or nil for the poll mode.
    func cibaNotificationEndpoint(apiKeyID: String) async throws -> String?
    /// The CIBA request of this event, or nil.
    func cibaRequest(eventID: String) async throws -> CIBARequest?
    /// The updater of a CIBA request (a token request's poll), whose rule
    /// runs above the store: in one write transaction, with every other
    /// change of the request held off until commit (PostgreSQL locks its
    /// row `FOR UPDATE`; SQLite has one writer), reads the request of event
    /// `eventID` and the event, hands them to `change`, and writes the
    /// request it returns, if any (`poll_interval`, `next_poll_at`,
    /// `redeemed_at`; nil changes nothing).
    /// `notFound` without a request. Whatever `change` throws leaves
    /// everything as it was; `change` runs once. Returns what it said.
    func updateCIBARequest<Outcome: Sendable>(
        eventID: String, _ change: @escaping @Sendable (CIBARequest, ApprovalEvent) throws -> (CIBARequest?, Outcome)
    ) async throws -> Outcome
    /// What a user's new event is made from, in one read: their devices as
    /// ``devices(issuer:clientUserID:)`` reads them, and how many of their
    /// events were rejected (by a device, a report, or the last wrong
    /// number) at `rejectedSince` or later.
    func devicesAndRejections(issuer: String, clientUserID: String, rejectedSince: Date) async throws
        -> (devices: [TrustedDevice], rejected: Int)
    /// Inserts an event as it is (one that is settled at creation).
    func insertEvent(_ event: ApprovalEvent) async throws
    /// The event with this id, or nil.
    func event(id: String) async throws -> ApprovalEvent?
    /// The event with this id and the name of its app's API key (nil once
    /// the key is revoked), in one read; nil if the event is unknown.
    func eventWithAppName(id: String) async throws -> (ApprovalEvent, appName: String?)?
    /// A user's events, newest first, at most `limit`; with `status`, only
    /// those with that status at `now` (expired = pending past its window).
    func events(issuer: String, clientUserID: String, status: EventStatus?, now: Date, limit: Int) async throws
        -> [ApprovalEvent]
    /// A user's events created before `before`, newest first, at most
    /// `limit`: the console's older pages.
    func events(issuer: String, clientUserID: String, before: Date, limit: Int) async throws -> [ApprovalEvent]
    /// The pending events unexpired at `now` that a user's devices answer
    /// (``ApprovalEvent/answeringUsers``), newest first, at most `limit`:
    /// the user's own events that need no quorum, and the events whose
    /// quorum names the user as an approver.
    func inboxEvents(issuer: String, clientUserID: String, now: Date, limit: Int) async throws -> [ApprovalEvent]

    /// Settles a pending event with one conditional write: only if it is
    /// still pending, unexpired at `now`, and `decision.deviceID` is an
    /// unrevoked device; else `conflict` and nothing changes. (Every
    /// `conflict` of a write on an event carries the event as that write
    /// found it: ``StoreError/event``.) `notFound` for
    /// an unknown id. An approval with `decision.enrolls` also enrolls that
    /// device (recorded in the audit log as the deciding device's doing);
    /// `alreadyExists` if its key is enrolled, and nothing changes. Returns
    /// the settled event.
    ///
    /// With `decision.spends`, the decision's own id is recorded in the
    /// same write, as ``consumeProofID(_:deviceID:expiresAt:now:)`` would:
    /// `replayed` if the device used it before, and nothing changes. When
    /// the event cannot be settled (`conflict`, `notFound`) the id may stay
    /// recorded; such an event can never be settled by it anyway.
    func settleEvent(id: String, decision: RecordedDecision, now: Date) async throws -> ApprovalEvent

    /// The updater of a fraud report ("this wasn't me"), whose rule
    /// (``FraudProtection/report(_:pending:requested:running:now:)``) runs
    /// above the store, written once for every store.
    ///
    /// In one write transaction, with every change of the user's events
    /// held off until commit and no event of theirs added meanwhile
    /// (PostgreSQL takes the user's lock, which a new pending event takes
    /// too, and their pending rows `FOR UPDATE`; SQLite has one writer):
    /// rejects event `id` by `decision` with reason `fraud_reported`, on the
    /// conditions and with the spent id of ``settleEvent(id:decision:now:)``
    /// (its refusals, and `change` does not run); reads the user's events
    /// stored as pending and the end of their running protection, hands
    /// them with the reported event to `change`, and writes the report it
    /// returns: its other rejected events (the columns
    /// ``updateEvent(id:spending:now:_:)`` writes), the protection
    /// (``insertPendingEvent`` refuses requesters' events with
    /// `userProtected` until then), the `event.fraud_reported` notice, and
    /// for the reported event and each rejected one what every change of an
    /// event writes. Whatever `change` throws leaves everything as it was.
    func reportFraud(
        id: String, decision: RecordedDecision, now: Date,
        _ change:
            @escaping @Sendable (_ reported: ApprovalEvent, _ pending: [ApprovalEvent], _ running: Date?)
            throws -> FraudReport
    ) async throws -> FraudReport

    /// The update-in-transaction entry (dex's updater): a change of an event
    /// decided by a rule above the store, written once for every store.
    ///
    /// In one write transaction: records `spending` first, as
    /// ``settleEvent(id:decision:now:)`` does (`replayed` if the device used
    /// that id before, and `change` does not run); reads event `id` with
    /// every other change of it held off until commit (PostgreSQL locks its
    /// row `FOR UPDATE`; SQLite has one writer); hands it to `change`; and
    /// writes the event `change` returns: the columns a rule changes
    /// (`status`, `status_reason`, `method`, `decided_by`, `decided_at`,
    /// `wrong_matches`, `code_attempts`, `expires_at`, `withdrawn_at`,
    /// `updated_at`), with what every change of an event writes in the same
    /// transaction (its webhook notice, its decision record, the CIBA
    /// client's ping once the event is settled, and on PostgreSQL the
    /// `NOTIFY` of its wake keys). `notFound` for an unknown id. Whatever
    /// `change` throws leaves everything as it was, the spent id too, and
    /// reaches the caller as it was thrown. `change` runs once. Returns the
    /// event as written.
    func updateEvent(
        id: String, spending: SpentProofID?, now: Date,
        _ change: @escaping @Sendable (ApprovalEvent) throws -> ApprovalEvent
    ) async throws -> ApprovalEvent

    /// The updater of a device's decision that a rule above the store
    /// judges in the transaction that writes it (an approval of an event
    /// that needs a quorum, which counts the approvals before it).
    ///
    /// In one write transaction: records `spending` first, as
    /// ``updateEvent(id:spending:now:_:)`` does (`replayed`, and `change`
    /// does not run); keeps `passkey`'s counter as
    /// ``advancePasskeySignCount(deviceID:credentialID:to:)`` does
    /// (`conflict` with no event); reads the deciding device `deviceID`
    /// (nil if unknown) with every change of it held off until commit
    /// (PostgreSQL: `FOR SHARE`, so a revocation or suspension either
    /// commits before and is seen, or waits), and event `id` as
    /// ``updateEvent(id:spending:now:_:)`` does; hands both to `change`; and
    /// writes the event it returns as that updater does, with what every
    /// change of an event writes (on PostgreSQL the `NOTIFY` of the inbox of
    /// each of its ``ApprovalEvent/answeringUsers``). An event returned
    /// unchanged is not written. `notFound` for an unknown event. Whatever
    /// `change` throws leaves everything as it was, the spent id too.
    /// `change` runs once. Returns the event as written and what `change`
    /// said.
    func updateEvent<Outcome: Sendable>(
        id: String, decidedBy deviceID: String, spending: SpentProofID?, passkey: PasskeyUse?, now: Date,
        _ change: @escaping @Sendable (ApprovalEvent, TrustedDevice?) throws -> (ApprovalEvent, Outcome)
    ) async throws -> (ApprovalEvent, Outcome)

    /// Deletes replay-cache entries, enrollment tokens and refresh tokens
    /// expired before `now`, verifications older than a day, and settled or
    /// expired events whose window ended before `eventsEndedBefore`, and
    /// outbox messages that finished before `eventsEndedBefore`, fraud
    /// protections that ended before `now`, request counters older than
    /// ``RequestRate/kept``, and console sessions and invitations that
    /// expired before `eventsEndedBefore` (never the audit log). Returns how
    /// many rows went.
    @discardableResult
    func garbageCollect(now: Date, eventsEndedBefore: Date) async throws -> Int
}

extension CountersignStore {
    /// A pending event the app backend asked for, at most `maxPending` of
    /// them per user.
    public func insertPendingEvent(_ event: ApprovalEvent, maxPending: Int, now: Date) async throws {
        try await insertPendingEvent(
            event, by: .backend, limits: PendingLimits(perUser: maxPending), announcing: [], attached: nil, now: now)
    }

    /// ``insertPendingEvent(_:by:limits:announcing:attached:now:)`` of an event no OpenID client asked for.
    public func insertPendingEvent(
        _ event: ApprovalEvent, by requester: PendingRequester, limits: PendingLimits, announcing: [OutboxMessage],
        now: Date
    ) async throws {
        try await insertPendingEvent(
            event, by: requester, limits: limits, announcing: announcing, attached: nil, now: now)
    }

    /// ``insertPendingEvent(_:by:limits:announcing:attached:now:)`` of an event a CIBA client asked for.
    public func insertPendingEvent(
        _ event: ApprovalEvent, by requester: PendingRequester, limits: PendingLimits, announcing: [OutboxMessage],
        ciba: CIBARequest?, now: Date
    ) async throws {
        try await insertPendingEvent(
            event, by: requester, limits: limits, announcing: announcing, attached: ciba.map { .ciba($0) }, now: now)
    }
}
