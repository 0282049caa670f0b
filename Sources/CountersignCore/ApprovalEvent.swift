public import Foundation

/// Where an event stands. `expired` is never written by a decision: a
/// pending event whose window has closed reads as expired.
public enum EventStatus: String, Codable, Sendable, CaseIterable {
    case pending
    case approved
    case rejected
    case expired
}

/// Why an event is closed, when no device decided it and its window did
/// not simply run out.
public enum StatusReason: String, Codable, Sendable {
    /// Its requester withdrew it (status `expired`): the person gave up, or
    /// typed a refused code.
    case withdrawn
    /// The approver typed the wrong number too often (status `rejected`).
    case tooManyWrongMatches = "too_many_wrong_matches"
    /// The approver answered "this wasn't me" (status `rejected`).
    case fraudReported = "fraud_reported"
    /// Rejected with no answer of its own: the user reported another
    /// request as fraud while this one waited (status `rejected`).
    case userProtected = "user_protected"
}

/// How an event was (or is to be) authenticated.
public enum AuthMethod: String, Codable, Sendable {
    case trustedDevice = "TRUSTED_DEVICE"
    case totp = "TOTP"
}

/// The door a request came through, for the approver, the app's webhooks
/// and the console to tell a VPN login from an app's own request.
public enum EventChannel: String, Codable, Sendable, CaseIterable {
    /// The REST API: an app backend, a requester (the CLI agent, PAM).
    case api
    /// OpenID CIBA (`/oauth/bc-authorize`).
    case ciba
    /// Sign-in to an OpenID Connect app by approval (the sign-in page).
    case openid
    /// Sign-in to the operator's console.
    case console
    /// The RADIUS listener: a VPN server or other network gear.
    case radius
}

/// Well-known event names; apps may use their own.
public enum EventName {
    public static let login = "LOGIN"
    public static let transaction = "TRANSACTION"
    public static let enrollNewTrustedDevice = "ENROLL_NEW_TRUSTED_DEVICE"

    /// Event names are upper-case words joined by underscores, ≤ 64 chars.
    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy {
                ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z"))
                    || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                    || $0 == UInt8(ascii: "_")
            }
    }
}

/// An authentication event: a login or transaction that a trusted device
/// approves or rejects, as the broker stores it.
public struct ApprovalEvent: Sendable, Equatable {
    /// Random, unguessable id.
    public var id: String
    public var createdAt: Date
    public var updatedAt: Date
    /// The API key id of the app the event belongs to.
    public var issuer: String
    /// The app's id for the user.
    public var clientUserID: String
    /// `LOGIN`, `TRANSACTION`, … .
    public var name: String
    /// The requester's address as the broker saw it.
    public var ip: String
    public var location: String
    public var method: AuthMethod
    /// The status as last written; see ``status(at:)`` for the one to show.
    public var storedStatus: EventStatus
    /// The end of the approval window, by the broker's clock.
    public var expiresAt: Date
    /// What a transaction is about, shown to the approver.
    public var details: String?
    /// The requesting machine's name, shown to the approver.
    public var requesterName: String?
    /// Per-event server nonce every decision must carry.
    public var nonce: String
    /// The number the requester shows and the approver must type, if asked.
    public var matchNumber: String?
    /// Wrong numbers typed so far.
    public var wrongMatches: Int
    /// SHA-256 of the requester's secret, for collecting the outcome.
    public var requesterTokenDigest: Data?
    /// The deciding device.
    public var decidedBy: String?
    public var decidedAt: Date?
    /// The device's decision JWS, verbatim.
    public var decision: String?
    /// For `ENROLL_NEW_TRUSTED_DEVICE`: the device to add if approved.
    public var newDevice: NewDevice?
    /// TOTP codes tried on this event so far.
    public var codeAttempts: Int
    /// When its requester withdrew it; its window closed then.
    public var withdrawnAt: Date?
    /// Why it ended, when the store wrote that down (a fraud report);
    /// ``statusReason`` derives the other reasons.
    public var storedReason: StatusReason?
    /// Whether an approval must carry a user-verified passkey assertion
    /// (proto/signing.md §10); a rejection never needs one.
    public var userVerification: Bool
    /// The passkey assertion the deciding device sent with its decision.
    public var assertion: PasskeyAssertion?
    /// The door it came through.
    public var channel: EventChannel
    /// Who must approve it, when it needs several people (M of N); nil
    /// when any trusted device of its own user decides it.
    public var quorum: ApproverQuorum?
    /// The approvals its quorum has so far, oldest first.
    public var approvals: [QuorumApproval]

    public init(
        id: String, createdAt: Date, updatedAt: Date, issuer: String, clientUserID: String, name: String, ip: String,
        location: String, method: AuthMethod, storedStatus: EventStatus, expiresAt: Date, details: String?,
        requesterName: String?, nonce: String, matchNumber: String?, wrongMatches: Int, requesterTokenDigest: Data?,
        decidedBy: String?, decidedAt: Date?, decision: String?, newDevice: NewDevice? = nil,
        codeAttempts: Int = 0, withdrawnAt: Date? = nil, storedReason: StatusReason? = nil,
        userVerification: Bool = false, assertion: PasskeyAssertion? = nil, channel: EventChannel = .api,
        quorum: ApproverQuorum? = nil, approvals: [QuorumApproval] = []
    ) {
        self.id = id
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.issuer = issuer
        self.clientUserID = clientUserID
        self.name = name
        self.ip = ip
        self.location = location
        self.method = method
        self.storedStatus = storedStatus
        self.expiresAt = expiresAt
        self.details = details
        self.requesterName = requesterName
        self.nonce = nonce
        self.matchNumber = matchNumber
        self.wrongMatches = wrongMatches
        self.requesterTokenDigest = requesterTokenDigest
        self.decidedBy = decidedBy
        self.decidedAt = decidedAt
        self.decision = decision
        self.newDevice = newDevice
        self.codeAttempts = codeAttempts
        self.withdrawnAt = withdrawnAt
        self.storedReason = storedReason
        self.userVerification = userVerification
        self.assertion = assertion
        self.channel = channel
        self.quorum = quorum
        self.approvals = approvals
    }

    /// The status at `now`: a pending event past its window is expired.
    public func status(at now: Date) -> EventStatus {
        storedStatus == .pending && now >= expiresAt ? .expired : storedStatus
    }

    /// Whether the outcome is final at `now`.
    public func isSettled(at now: Date) -> Bool { status(at: now) != .pending }

    /// Whether a change that leaves the event as it is at `now` pings a
    /// CIBA client: only an event that came through CIBA has one, and it is
    /// pinged once there is a result to fetch, not for a change that leaves
    /// the request pending (a wrong number). The stores read the request
    /// only then.
    public func pingsCIBAClient(at now: Date) -> Bool { channel == .ciba && isSettled(at: now) }

    /// Why the event ended as it did, when that was neither a device's
    /// decision nor its window running out.
    public var statusReason: StatusReason? {
        if let storedReason { return storedReason }
        if withdrawnAt != nil { return .withdrawn }
        if storedStatus == .rejected, decidedBy == nil, wrongMatches > 0 { return .tooManyWrongMatches }
        return nil
    }
}

extension ApprovalEvent {
    /// A trusted device's own request (seed case 1), approved by itself at
    /// `now`.
    public static func approvedByItself(
        _ device: TrustedDevice, name: String, ip: String, details: String?, now: Date
    ) -> ApprovalEvent {
        ApprovalEvent(
            id: newID(), createdAt: now, updatedAt: now, issuer: device.issuer, clientUserID: device.clientUserID,
            name: name, ip: ip, location: "Unknown", method: .trustedDevice, storedStatus: .approved, expiresAt: now,
            details: details, requesterName: device.name, nonce: SecretToken.generate(bytes: 16), matchNumber: nil,
            wrongMatches: 0, requesterTokenDigest: nil, decidedBy: device.id, decidedAt: now, decision: nil)
    }

    /// A login no device was asked about, let in by a TOTP code of
    /// `device` that the backend checked at `now`: recorded as approved by
    /// that device with method `TOTP`, so that every login a code lets in
    /// leaves an approved event.
    public static func approvedByCode(
        of device: TrustedDevice, ip: String, location: String?, details: String?,
        requesterName: String?, now: Date
    ) -> ApprovalEvent {
        ApprovalEvent(
            id: newID(), createdAt: now, updatedAt: now, issuer: device.issuer, clientUserID: device.clientUserID,
            name: EventName.login, ip: ip, location: location ?? "Unknown", method: .totp, storedStatus: .approved,
            expiresAt: now, details: details, requesterName: requesterName, nonce: SecretToken.generate(bytes: 16),
            matchNumber: nil, wrongMatches: 0, requesterTokenDigest: nil, decidedBy: device.id, decidedAt: now,
            decision: nil)
    }

    /// A request for a trusted device of the user to decide within
    /// `window` (seed case 2); its outcome is collected with the secret
    /// whose digest is `requesterTokenDigest`.
    public static func pending(
        issuer: String, user: String, name: String, ip: String, location: String?, details: String?,
        requesterName: String?, matchNumber: String?, requesterTokenDigest: Data, newDevice: NewDevice?, now: Date,
        window: TimeInterval, channel: EventChannel = .api
    ) -> ApprovalEvent {
        ApprovalEvent(
            id: newID(), createdAt: now, updatedAt: now, issuer: issuer, clientUserID: user, name: name, ip: ip,
            location: location ?? "Unknown", method: .trustedDevice, storedStatus: .pending, expiresAt: now + window,
            details: details, requesterName: requesterName, nonce: SecretToken.generate(bytes: 16),
            matchNumber: matchNumber, wrongMatches: 0, requesterTokenDigest: requesterTokenDigest, decidedBy: nil,
            decidedAt: nil, decision: nil, newDevice: newDevice, channel: channel)
    }

    /// A new random event id.
    public static func newID() -> String { "ev_" + SecretToken.generate(bytes: 16) }

    /// The 6-digit code a new machine shows for pairing, typed on the approving device.
    public static func newPairingCode() -> String {
        String(Int.random(in: 100_000...999_999))
    }

    /// A number for number matching of `digits` digits (2 or 6), never
    /// starting with 0 so it never reads as a shorter one.
    public static func newMatchNumber(digits: Int = 2) -> String {
        digits >= 6 ? String(Int.random(in: 100_000...999_999)) : String(Int.random(in: 10...99))
    }
}

/// The device an `ENROLL_NEW_TRUSTED_DEVICE` event asks to add: its key,
/// which the approval is bound to (by thumbprint), and how it is shown.
public struct NewDevice: Codable, Sendable, Equatable {
    public var publicKey: DevicePublicKey
    public var name: String
    public var type: String

    enum CodingKeys: String, CodingKey {
        case name, type
        case publicKey = "public_key"
    }

    public init(publicKey: DevicePublicKey, name: String, type: String) {
        self.publicKey = publicKey
        self.name = name
        self.type = type
    }
}
