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
    /// Ping mode: the `auth_req_id` the notification carries back (only
    /// kept when a notification will be sent).
    public var authRequestID: String?
    /// When tokens were issued for it: an `auth_req_id` works once.
    public var redeemedAt: Date?
    public var createdAt: Date

    public init(
        eventID: String, apiKeyID: String, scope: String, interval: Int, nextPollAt: Date,
        notificationToken: String? = nil, authRequestID: String? = nil, redeemedAt: Date? = nil, createdAt: Date
    ) {
        self.eventID = eventID
        self.apiKeyID = apiKeyID
        self.scope = scope
        self.interval = interval
        self.nextPollAt = nextPollAt
        self.notificationToken = notificationToken
        self.authRequestID = authRequestID
        self.redeemedAt = redeemedAt
        self.createdAt = createdAt
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
