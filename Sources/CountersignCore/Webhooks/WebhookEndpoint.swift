public import Foundation

/// What a webhook message reports; an endpoint subscribes to some or all.
public enum WebhookType: String, Sendable, CaseIterable, Codable {
    /// A pending event was created (by a requester or the app backend).
    case eventCreated = "event.created"
    /// One more approver approved an event that needs a quorum; it is
    /// still pending (the last approval sends `event.approved`).
    case eventApprovalAdded = "event.approval_added"
    case eventApproved = "event.approved"
    case eventRejected = "event.rejected"
    /// A pending event's window closed with no answer.
    case eventExpired = "event.expired"
    /// The requester withdrew its pending event.
    case eventWithdrawn = "event.withdrawn"
    case deviceEnrolled = "device.enrolled"
    case deviceRemoved = "device.removed"
    /// A device's approvals are now protected by a passkey, its public key
    /// given to pin (proto/signing.md §10).
    case devicePasskeyAdded = "device.passkey_added"
    /// A device's passkey was turned off.
    case devicePasskeyRemoved = "device.passkey_removed"
    /// The directory no longer lists the device's user as enabled: its
    /// decisions are refused until they are.
    case deviceSuspended = "device.suspended"
    /// The directory lists the device's user as enabled again.
    case deviceReinstated = "device.reinstated"
    /// A user answered a request with "this wasn't me".
    case fraudReported = "fraud.reported"
    /// Too many wrong codes locked the user's code sign-in for a while.
    case accountLocked = "account.locked"
}

/// Where an app backend (an API key) is told what happens, signed with the
/// endpoint's own secret as Standard Webhooks says.
public struct WebhookEndpoint: Sendable, Equatable {
    /// `wh_` and 96 random bits.
    public var id: String
    public var apiKeyID: String
    public var url: String
    /// The types it is sent; empty: all of them.
    public var types: [WebhookType]
    public var secret: WebhookSecret
    /// The secret before the last rotation, still signed with (beside the
    /// new one) until ``previousUntil``, so a receiver can roll over.
    public var previousSecret: WebhookSecret?
    public var previousUntil: Date?
    public var createdAt: Date
    /// Since when every attempt failed; nil after a delivery.
    public var failingSince: Date?
    /// Set when it failed for too long (``WebhookHealth``) or by hand; a
    /// disabled endpoint is sent nothing until enabled again.
    public var disabledAt: Date?
    public var disabledReason: String?

    public init(
        id: String = WebhookEndpoint.newID(), apiKeyID: String, url: String, types: [WebhookType],
        secret: WebhookSecret, previousSecret: WebhookSecret? = nil, previousUntil: Date? = nil, createdAt: Date,
        failingSince: Date? = nil, disabledAt: Date? = nil, disabledReason: String? = nil
    ) {
        self.id = id
        self.apiKeyID = apiKeyID
        self.url = url
        self.types = types
        self.secret = secret
        self.previousSecret = previousSecret
        self.previousUntil = previousUntil
        self.createdAt = createdAt
        self.failingSince = failingSince
        self.disabledAt = disabledAt
        self.disabledReason = disabledReason
    }

    public static func newID() -> String { "wh_" + SecretToken.generate(bytes: 12) }

    /// Whether messages of `type` go to it.
    public func wants(_ type: WebhookType) -> Bool { types.isEmpty || types.contains(type) }

    /// The secrets a message sent at `now` is signed with: the current
    /// one, and the previous one while the rotation's overlap lasts.
    public func secrets(at now: Date) -> [WebhookSecret] {
        guard let previousSecret, let previousUntil, now < previousUntil else { return [secret] }
        return [secret, previousSecret]
    }

    /// The types as stored and shown: comma-separated, empty for all.
    public var typeList: String { types.map(\.rawValue).joined(separator: ",") }

    /// Types from ``typeList``'s form; nil if one is unknown.
    public static func types(from list: String) -> [WebhookType]? {
        var types: [WebhookType] = []
        for name in list.split(separator: ",") {
            guard let type = WebhookType(rawValue: name.trimmingCharacters(in: .whitespaces)) else { return nil }
            if !types.contains(type) { types.append(type) }
        }
        return types
    }

    /// Why `url` cannot be an endpoint, or nil if it can: an https URL, or
    /// http to this machine's loopback address (a receiver under
    /// development). No user name or password in it (the URL is shown and
    /// logged), no fragment, at most 2000 characters of printable ASCII
    /// (percent-encoded, as it goes on the wire). The host is a DNS
    /// name (internationalised names in their ASCII form) or an IP address:
    /// URLComponents alone takes `https://hooks*` as a URL with a host.
    public static func problem(withURL url: String, what: String = "webhook URL") -> String? {
        guard url.count <= 2000 else { return "the \(what) is longer than 2000 characters" }
        guard url.unicodeScalars.allSatisfy({ (33...126).contains($0.value) }) else {
            return "the \(what) must be printable ASCII without spaces (percent-encode the rest)"
        }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else { return "the \(what) must be an absolute https URL" }
        guard isHostName(host) else {
            return "the \(what)'s host must be a DNS name or an IP address, not \"\(host)\""
        }
        guard components.user == nil, components.password == nil else {
            return "the \(what) must not carry a user name or password"
        }
        guard components.fragment == nil else { return "the \(what) must not have a fragment" }
        switch scheme {
        case "https": return nil
        case "http" where isLoopback(host): return nil
        default: return "the \(what) must be https (http only to 127.0.0.1, [::1] or localhost)"
        }
    }

    /// Whether `host` is spelled as a DNS name or an IP address: letters,
    /// digits, `.`, `-` and `_`, or an IPv6 address in brackets.
    static func isHostName(_ host: String) -> Bool {
        if host.hasPrefix("["), host.hasSuffix("]"), host.count > 2 {
            return host.dropFirst().dropLast().unicodeScalars.allSatisfy {
                $0.properties.isASCIIHexDigit || $0 == ":" || $0 == "."
            }
        }
        return host.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                || $0 == "." || $0 == "-" || $0 == "_"
        }
    }

    /// Whether a URL's host names this machine's loopback interface.
    public static func isLoopback(_ host: String) -> Bool {
        ["127.0.0.1", "::1", "[::1]", "localhost"].contains(host.lowercased())
    }
}

/// When an endpoint that keeps failing is disabled: once every attempt
/// since ``disableAfter`` ago failed (three days, as long as a message is
/// retried: by then nothing sent to it has arrived). One delivery clears
/// the count.
public enum WebhookHealth {
    public static let disableAfter: TimeInterval = 3 * 86400

    /// What an attempt changes on its endpoint.
    public enum Change: Sendable, Equatable {
        case healthy
        case failing(since: Date)
        case disabled(reason: String)
    }

    public static func after(
        delivered: Bool, failingSince: Date?, reason: String, now: Date, disableAfter: TimeInterval = disableAfter
    ) -> Change {
        guard !delivered else { return .healthy }
        let since = failingSince ?? now
        guard now.timeIntervalSince(since) >= disableAfter else { return .failing(since: since) }
        return .disabled(
            reason: "every delivery failed since \(since.formatted(.iso8601)); the last: \(reason)")
    }
}
