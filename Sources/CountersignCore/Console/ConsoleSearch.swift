public import Foundation

/// What the console searches events by: each filter given narrows the
/// search, none gives every event; newest first, in pages.
public struct EventQuery: Sendable, Equatable {
    /// The app (API key id).
    public var issuer: String?
    /// The user, exactly.
    public var clientUserID: String?
    /// The state at the time of the search: `expired` is a pending event
    /// whose window has closed (a withdrawn one too).
    public var status: EventStatus?
    /// The type: `LOGIN`, `TRANSACTION`, or an app's own.
    public var name: String?
    public var channel: EventChannel?
    /// The address the request was made from, exactly.
    public var ip: String?
    /// Created at or after.
    public var from: Date?
    /// Created before.
    public var to: Date?
    /// Where the page starts: after this position, older.
    public var after: PageCursor?

    public init(
        issuer: String? = nil, clientUserID: String? = nil, status: EventStatus? = nil, name: String? = nil,
        channel: EventChannel? = nil, ip: String? = nil, from: Date? = nil, to: Date? = nil,
        after: PageCursor? = nil
    ) {
        self.issuer = issuer
        self.clientUserID = clientUserID
        self.status = status
        self.name = name
        self.channel = channel
        self.ip = ip
        self.from = from
        self.to = to
        self.after = after
    }

    /// Whether the search finds nothing without asking: a filter holds a
    /// NUL: no stored text holds one, and neither store can ask for one (SQLite's
    /// binding ends text at it, PostgreSQL refuses it).
    public var findsNothing: Bool {
        [issuer, clientUserID, name, ip, after?.id].contains { $0?.utf8.contains(0) == true }
    }
}

/// A place in a list kept newest first (events, outbox messages): the
/// last item of a page, by its creation time and id (which breaks ties in
/// byte order). Written as an opaque text for the next page's `cursor`.
public struct PageCursor: Sendable, Equatable {
    public let createdAt: Date
    public let id: String

    public init(createdAt: Date, id: String) {
        self.createdAt = createdAt
        self.id = id
    }

    public init(after event: ApprovalEvent) {
        self.init(createdAt: event.createdAt, id: event.id)
    }

    public init(after message: OutboxMessage) {
        self.init(createdAt: message.createdAt, id: message.id)
    }

    /// Seconds (as the stores keep them, exactly) and the id, base64url.
    public var text: String {
        Base64URL.encode(Data("\(createdAt.timeIntervalSince1970)~\(id)".utf8))
    }

    /// Reads ``text``; nil for anything else.
    public init?(text: String) {
        guard text.utf8.count <= 512, let data = Base64URL.decode(text),
            let plain = String(data: data, encoding: .utf8),
            let tilde = plain.firstIndex(of: "~"), let seconds = Double(plain[..<tilde]), seconds.isFinite
        else { return nil }
        let id = String(plain[plain.index(after: tilde)...])
        guard !id.isEmpty else { return nil }
        self.init(createdAt: Date(timeIntervalSince1970: seconds), id: id)
    }
}

/// A user the broker knows, as the console's list shows them: every
/// app where they have a device, how many devices still trusted, and
/// when one was last seen.
public struct UserSummary: Sendable, Equatable {
    public let clientUserID: String
    /// The apps (API key ids) of their devices, revoked ones too, sorted.
    public let issuers: [String]
    /// Devices not removed.
    public let activeDevices: Int
    /// Every device they ever had.
    public let devices: Int
    public let lastSeenAt: Date?

    public init(clientUserID: String, issuers: [String], activeDevices: Int, devices: Int, lastSeenAt: Date?) {
        self.clientUserID = clientUserID
        self.issuers = issuers
        self.activeDevices = activeDevices
        self.devices = devices
        self.lastSeenAt = lastSeenAt
    }

    /// The exclusive upper bound of the ids that start with `prefix` in
    /// byte order: the prefix followed by the highest code point, whose
    /// UTF-8 (F4 8F BF BF) sorts after every character a user id can hold.
    public static func upperBound(ofPrefix prefix: String) -> String { prefix + "\u{10FFFF}" }

    /// Whether a prefix finds nobody without asking: it holds a NUL (see
    /// ``EventQuery/findsNothing``).
    public static func findsNobody(prefix: String) -> Bool { prefix.utf8.contains(0) }

    /// Where a page starts, as a store can ask for it: the ids after a
    /// text with a NUL are those after the text before it, since no id
    /// holds one.
    public static func position(after: String?) -> String? {
        after.map { String(decoding: $0.utf8.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
