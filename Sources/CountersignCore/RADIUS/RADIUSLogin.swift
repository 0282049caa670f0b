public import Foundation

/// What a RADIUS login's requests are answered, decided from the event
/// they opened: the one rule the listener applies, whichever instance
/// reads the event.
public enum RADIUSLogin {
    /// How a request is answered.
    public enum Verdict: Sendable, Equatable {
        case accept(message: String)
        case reject(message: String)
        /// Still pending: Access-Challenge again (challenge mode), with the
        /// seconds its window has left.
        case waiting(message: String, secondsLeft: Int)
    }

    /// How long after its approval a login's State still gets Access-Accept:
    /// the held request is answered at once, and a NAS that asks again
    /// (its retry of a request the broker answered late) within this gets
    /// the same; later the State is spent, and the login must start again.
    public static let acceptedFor: TimeInterval = 30

    /// The answer `event` calls for at `now`.
    public static func verdict(for event: ApprovalEvent, at now: Date) -> Verdict {
        switch event.status(at: now) {
        case .approved:
            guard now.timeIntervalSince(event.decidedAt ?? event.updatedAt) <= acceptedFor else {
                return .reject(message: "This login is over; start again")
            }
            return .accept(message: event.method == .totp ? "Approved with a TOTP code" : "Approved on your device")
        case .rejected:
            switch event.statusReason {
            case .tooManyWrongMatches: return .reject(message: "Refused: the wrong number was typed too often")
            case .fraudReported, .userProtected:
                return .reject(message: "Refused: a request was reported as not yours; ask your administrator")
            default: return .reject(message: "Refused on your device")
            }
        case .expired:
            return .reject(
                message: event.withdrawnAt != nil ? "The request was withdrawn" : "No answer in time; try again")
        case .pending:
            return .waiting(message: prompt(for: event, again: true), secondsLeft: secondsLeft(of: event, at: now))
        }
    }

    /// The whole seconds a pending login's window has left, at least 1: its
    /// challenge's Session-Timeout.
    public static func secondsLeft(of event: ApprovalEvent, at now: Date) -> Int {
        max(1, Int(event.expiresAt.timeIntervalSince(now).rounded(.up)))
    }

    /// What the person at the VPN prompt reads while the device decides.
    public static func prompt(for event: ApprovalEvent, again: Bool = false) -> String {
        let start = again ? "Not approved yet. " : ""
        guard let number = event.matchNumber else { return start + "Approve the request on your device" }
        return start + "Approve on your device: type \(number), then press Enter here (or type a TOTP code)"
    }

    /// Whether the event a State names is this client's login: opened
    /// through the RADIUS listener by this client (its name is the
    /// requester), for this user of its API key. A State is never taken
    /// at another client, even of the same app: that one may check a
    /// password first that this login never passed.
    public static func belongs(_ event: ApprovalEvent, to client: RADIUSClient, user: String) -> Bool {
        event.channel == .radius && event.requesterName == client.name && event.issuer == client.apiKeyID
            && event.clientUserID == user
    }

    /// Whether a password is a TOTP code rather than a first factor or
    /// nothing: six digits.
    public static func isCode(_ password: String) -> Bool {
        password.utf8.count == 6 && password.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}

/// The State a challenge carries (RFC 2865 §5.24): the event and the
/// requester secret that collects its outcome, so that the next request
/// may reach any instance on the store. It travels only between a NAS and
/// the broker, inside packets the NAS's shared secret authenticates.
public struct RADIUSState: Sendable, Equatable {
    public let eventID: String
    public let requesterToken: String

    static let prefix = "cs1:"

    public init(eventID: String, requesterToken: String) {
        self.eventID = eventID
        self.requesterToken = requesterToken
    }

    public init?(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasPrefix(Self.prefix) else { return nil }
        let parts = text.dropFirst(Self.prefix.count).split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        eventID = String(parts[0])
        requesterToken = String(parts[1])
    }

    public var bytes: [UInt8] { Array((Self.prefix + eventID + ":" + requesterToken).utf8) }
}
