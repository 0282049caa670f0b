public import Foundation

/// One thing that happened to an app's user, to be told to the app
/// backend's webhook endpoints: written to the outbox in the transaction
/// that makes the change, one message per endpoint that wants its type.
public struct WebhookNotice: Sendable, Equatable {
    /// The app (API key) whose endpoints are told.
    public var apiKeyID: String
    public var type: WebhookType
    /// The event it is about, if any.
    public var eventID: String?
    /// The message body: `{"data": {…}, "timestamp": RFC 3339, "type": …}`,
    /// the same bytes on every attempt and to every endpoint.
    public var body: Data
    public var at: Date

    init(apiKeyID: String, type: WebhookType, eventID: String?, at: Date, data: some WireJSONWritable) {
        self.apiKeyID = apiKeyID
        self.type = type
        self.eventID = eventID
        self.at = at
        self.body = Data(Body(type: type.rawValue, timestamp: at, data: data).wireJSON())
    }

    /// How long a message is retried: three days.
    public static let deliveryTime: TimeInterval = 3 * 86400

    /// The notices of an event that was just stored: `event.created` for
    /// a pending one; for one settled at creation (a code accepted at
    /// once), its decision.
    public static func created(_ event: ApprovalEvent, now: Date) -> [WebhookNotice] {
        if event.status(at: now) == .pending { return [Self.event(.eventCreated, event, now: now)] }
        return decided(event, now: now).map { [$0] } ?? []
    }

    /// The notice of an event that a write at `now` just changed: it left
    /// `pending` (a decision, the last wrong number, a withdrawal), or an
    /// approval of its quorum that leaves it pending came in then; nil for
    /// any other change of a pending event (a wrong number).
    public static func decided(_ event: ApprovalEvent, now: Date) -> WebhookNotice? {
        if event.withdrawnAt != nil { return Self.event(.eventWithdrawn, event, now: now) }
        switch event.storedStatus {
        case .approved: return Self.event(.eventApproved, event, now: now)
        case .rejected: return Self.event(.eventRejected, event, now: now)
        case .pending where event.approvals.last?.approvedAt == now:
            return Self.event(.eventApprovalAdded, event, now: now)
        default: return nil
        }
    }

    /// The notice of a pending event whose window ran out.
    public static func expired(_ event: ApprovalEvent, now: Date) -> WebhookNotice {
        Self.event(.eventExpired, event, now: now)
    }

    /// `type` for `event`, its data the event as the REST API shows it,
    /// without the broker-signed token (fetch the event for that).
    static func event(_ type: WebhookType, _ event: ApprovalEvent, now: Date) -> WebhookNotice {
        WebhookNotice(
            apiKeyID: event.issuer, type: type, eventID: event.id, at: now,
            data: EventDocument(event, now: now, signature: nil))
    }

    /// `fraud.reported`: the user answered a request with "this wasn't me";
    /// each event it rejected has its own `event.rejected` besides.
    public static func fraud(_ report: FraudReport, now: Date) -> WebhookNotice {
        WebhookNotice(
            apiKeyID: report.event.issuer, type: .fraudReported, eventID: report.event.id, at: now,
            data: FraudData(report: report, now: now))
    }

    /// `account.locked`: an attempt at a code reached the limit of
    /// consecutive failures, and the user's codes are refused until
    /// `until` (if that very attempt's code is right, the lock is lifted at
    /// once).
    public static func accountLocked(
        issuer: String, clientUserID: String, failures: Int, until: Date, now: Date
    ) -> WebhookNotice {
        WebhookNotice(
            apiKeyID: issuer, type: .accountLocked, eventID: nil, at: now,
            data: LockData(issuer: issuer, clientUserID: clientUserID, failures: failures, until: until))
    }

    /// `device.enrolled`, `device.removed`, `device.passkey_added`,
    /// `device.passkey_removed`, `device.suspended` or
    /// `device.reinstated`, from the audit record.
    public static func device(_ change: DeviceChange) -> WebhookNotice {
        let type: WebhookType =
            switch change.action {
            case .enrolled: .deviceEnrolled
            case .revoked: .deviceRemoved
            case .passkeyAdded: .devicePasskeyAdded
            case .passkeyRemoved: .devicePasskeyRemoved
            case .suspended: .deviceSuspended
            case .reinstated: .deviceReinstated
            }
        return WebhookNotice(
            apiKeyID: change.issuer, type: type, eventID: nil, at: change.at, data: DeviceData(change: change))
    }

    /// The messages to `endpoints` (the app's, enabled ones) that want it.
    public func messages(to endpoints: [WebhookEndpoint]) -> [OutboxMessage] {
        endpoints.filter { $0.apiKeyID == apiKeyID && $0.disabledAt == nil && $0.wants(type) }.map {
            OutboxMessage(
                kind: .webhook, target: $0.id, receiver: OutboxMessage.receiver(of: $0.url), eventID: eventID,
                payload: body, createdAt: at, deliverUntil: at + Self.deliveryTime)
        }
    }

    private struct Body<Payload: WireJSONWritable>: WireJSONWritable {
        let type: String
        let timestamp: Date
        let data: Payload

        func write(to object: inout WireJSON.Object) {
            object.field("data", data)
            object.field("timestamp", timestamp)
            object.field("type", type)
        }
    }

    private struct FraudData: WireJSONWritable {
        let report: FraudReport
        let now: Date

        func write(to object: inout WireJSON.Object) {
            object.field("also_rejected", report.alsoRejected.map(\.id))
            object.field("client_user_id", report.event.clientUserID)
            object.field("device_id", report.event.decidedBy)
            object.field("issuer", report.event.issuer)
            object.field("protected_until", report.protectedUntil)
            object.field("reported", EventDocument(report.event, now: now, signature: nil))
        }
    }

    private struct LockData: WireJSONWritable {
        let issuer: String
        let clientUserID: String
        let failures: Int
        let until: Date

        func write(to object: inout WireJSON.Object) {
            object.field("client_user_id", clientUserID)
            object.field("consecutive_failures", failures)
            object.field("issuer", issuer)
            object.field("locked_until", until)
        }
    }

    private struct DeviceData: WireJSONWritable {
        let change: DeviceChange

        func write(to object: inout WireJSON.Object) {
            object.field("actor", change.author.actor)
            object.field("at", change.at)
            object.field("client_user_id", change.clientUserID)
            object.field("device_id", change.deviceID)
            object.field("device_name", change.deviceName)
            object.field("ip", change.author.ip)
            object.field("issuer", change.issuer)
            object.field("passkey", change.passkey.map(PasskeyDocument.init))
            object.field("public_key", change.publicKey)
        }
    }
}

extension OutboxMessage {
    /// A webhook message's type, read from its body; nil for another kind.
    public var webhookType: WebhookType? {
        struct Head: Decodable { let type: WebhookType }
        guard kind == .webhook else { return nil }
        return try? JSONDecoder().decode(Head.self, from: payload).type
    }
}
