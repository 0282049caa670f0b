public import Foundation

/// An OpenID CIBA authentication request (CIBA Core 1.0): an event asked
/// for by a client through `/oauth/bc-authorize`, and what its token
/// endpoint polls need.
///
/// The `auth_req_id` is `<event id>.<secret>`; the secret is the event's
/// requester token (256 random bits, kept as its digest on the event), so
/// the id alone finds the row and only its holder collects the outcome.
public struct CIBARequest: Sendable, Equatable {
    public var eventID: String
    /// The client (API key) that asked; the only one its `auth_req_id` works for.
    public var apiKeyID: String
    /// The scope asked for (it includes `openid`).
    public var scope: String
    /// Seconds a client waits between polls; grows by ``CIBAPollRule/slowDownStep`` on each `slow_down`.
    public var interval: Int
    /// A poll before this is answered `slow_down`.
    public var nextPollAt: Date
    /// Ping mode: the client's bearer token for its notification endpoint.
    public var notificationToken: String?
    /// Ping mode: where the client was registered to be notified when it asked.
    public var notificationEndpoint: String?
    /// Ping mode: the `auth_req_id` the notification carries back (only
    /// kept when a notification will be sent).
    public var authRequestID: String?
    /// When tokens were issued for it: an `auth_req_id` works once.
    public var redeemedAt: Date?
    public var createdAt: Date

    public init(
        eventID: String, apiKeyID: String, scope: String, interval: Int, nextPollAt: Date,
        notificationToken: String? = nil, notificationEndpoint: String? = nil, authRequestID: String? = nil,
        redeemedAt: Date? = nil, createdAt: Date
    ) {
        self.eventID = eventID
        self.apiKeyID = apiKeyID
        self.scope = scope
        self.interval = interval
        self.nextPollAt = nextPollAt
        self.notificationToken = notificationToken
        self.notificationEndpoint = notificationEndpoint
        self.authRequestID = authRequestID
        self.redeemedAt = redeemedAt
        self.createdAt = createdAt
    }

    /// How long a ping is tried: the client may still redeem an approval
    /// after the request's window, so longer than that.
    public static let pingDeliveryTime: TimeInterval = 3600

    /// Ping mode: the notification (CIBA Core §10.2) that tells the client
    /// its request was answered (or ran out), to be sent through the
    /// outbox; nil for a request in poll mode.
    public func ping(now: Date) -> OutboxMessage? {
        guard notificationToken != nil, let notificationEndpoint, let authRequestID else { return nil }
        let body = try? JSONSerialization.data(withJSONObject: ["auth_req_id": authRequestID], options: [.sortedKeys])
        return OutboxMessage(
            kind: .cibaPing, target: eventID, receiver: OutboxMessage.receiver(of: notificationEndpoint),
            eventID: eventID, payload: body ?? Data(), createdAt: now, deliverUntil: now + Self.pingDeliveryTime)
    }

    /// Whether a `client_notification_token` can be sent back as a bearer
    /// token (RFC 6750 §2.1 `b64token`), 16 to 1024 characters as CIBA Core
    /// §7.1 bounds it.
    public static func isValidNotificationToken(_ token: String) -> Bool {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/")
        let body = token.reversed().drop { $0 == "=" }
        return (16...1024).contains(token.count) && !body.isEmpty && body.allSatisfy(allowed.contains)
    }

    /// `<event id>.<secret>`.
    public static func authRequestID(eventID: String, secret: String) -> String { "\(eventID).\(secret)" }

    /// The event id and secret of an `auth_req_id`, or nil if it is not one.
    public static func parse(authRequestID: String) -> (eventID: String, secret: String)? {
        let parts = authRequestID.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].hasPrefix("ev_"), parts[0].count <= 64, !parts[1].isEmpty,
            parts[1].count <= 128
        else { return nil }
        return (String(parts[0]), String(parts[1]))
    }
}
