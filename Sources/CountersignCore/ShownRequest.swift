import Crypto
public import Foundation

/// What an approver is shown of a request, as the text it reads: the
/// fields a decision's `shown` claim commits to (proto/signing.md §2,
/// "What the approver was shown").
///
/// A device signs the digest of what it displayed; the broker refuses a
/// decision whose digest is not that of the event as stored, and a backend
/// can later check, with keys it pinned itself, that the user approved
/// exactly these words, whatever the broker's database says now.
public struct ShownRequest: Sendable, Equatable {
    /// The event name, e.g. `LOGIN`.
    public var event: String
    /// The user the request is for (`client_user_id`).
    public var user: String
    /// The app's name (its API key's name).
    public var app: String
    /// The requesting machine's name, empty when it gave none.
    public var requester: String
    /// The client address the broker recorded.
    public var address: String
    /// The place, as recorded (`Unknown` when none).
    public var location: String
    /// Creation time, seconds since 1970.
    public var created: Int
    /// The app's details or CIBA binding message, empty when none.
    public var details: String

    /// The version label the serialization starts with.
    public static let label = "countersign-shown-v1"

    public init(
        event: String, user: String, app: String, requester: String?, address: String, location: String,
        created: Int, details: String?
    ) {
        self.event = event
        self.user = user
        self.app = app
        self.requester = requester ?? ""
        self.address = address
        self.location = location
        self.created = created
        self.details = details ?? ""
    }

    /// What an approver displays for an event document of the app `app`.
    public init(_ event: EventDocument, app: String) {
        self.init(
            event: event.event, user: event.clientUserID, app: app, requester: event.requesterName,
            address: event.ip, location: event.location, created: Int(event.timestamp) ?? 0, details: event.details)
    }

    /// What an approver is shown for a stored event of the app `app`.
    public init(_ event: ApprovalEvent, app: String) {
        self.init(
            event: event.name, user: event.clientUserID, app: app, requester: event.requesterName,
            address: event.ip, location: event.location, created: Int(event.createdAt.timeIntervalSince1970),
            details: event.details)
    }

    /// What an approver displays for an inbox item.
    public init(_ item: InboxItem) { self.init(item.event, app: item.app) }

    /// The fields in their fixed order, each named.
    public var fields: [(name: String, value: String)] {
        [
            ("event", event), ("user", user), ("app", app), ("requester", requester), ("address", address),
            ("location", location), ("created", String(created)), ("details", details),
        ]
    }

    /// The bytes hashed: the label, then for each field a line feed, its
    /// name, `=`, the byte length of its UTF-8 value in decimal, `:` and the
    /// value. Lengths make it unambiguous whatever a value contains.
    public var canonicalBytes: Data {
        var bytes = Data(Self.label.utf8)
        for (name, value) in fields {
            let utf8 = Data(value.utf8)
            bytes.append(contentsOf: "\n\(name)=\(utf8.count):".utf8)
            bytes.append(utf8)
        }
        return bytes
    }

    /// `BASE64URL(SHA-256(canonicalBytes))`: the decision's `shown` claim.
    public var digest: String { Base64URL.encode(Data(SHA256.hash(data: canonicalBytes))) }
}
