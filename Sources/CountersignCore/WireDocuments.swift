public import Foundation

/// An event as the REST API shows it. Field names follow the original
/// "sign in with device" event object; the rest is Countersign's.
public struct EventDocument: Codable, Sendable, Equatable {
    public var ID: String
    public var CreatedAt: Date
    public var UpdatedAt: Date
    public var DeletedAt: Date?
    public var clientUserID: String
    public var issuer: String
    public var event: String
    public var ip: String
    public var location: String
    /// Creation time, Unix seconds as a string.
    public var timestamp: String
    public var method: AuthMethod
    /// True while pending.
    public var new: Bool
    public var approved: Bool
    /// The broker-signed event token once settled.
    public var signature: String?
    public var status: EventStatus
    public var expiresAt: Date
    public var details: String?
    public var requesterName: String?
    public var decidedBy: String?
    public var decidedAt: Date?
    /// The deciding device's signed decision, verbatim.
    public var decision: String?
    /// Why it is closed, when no device decided and the window did not
    /// simply run out: withdrawn by its requester, or too many wrong numbers.
    public var statusReason: StatusReason?
    /// `required` when only a user-verified passkey assertion can approve it.
    public var userVerification: String?
    /// The deciding device's passkey assertion, verbatim, when it sent one.
    public var assertion: PasskeyAssertion?
    /// For an approved event, how the user was authenticated
    /// (``ApprovalAuthentication``), as the event token says it too.
    public var acr: String?
    public var amr: [String]?
    /// The door the request came through: `api`, `ciba`, `openid` or
    /// `radius`; nil from a broker that predates it.
    public var channel: EventChannel?
    /// Who must approve it, when it needs several people (M of N).
    public var approvers: ApproverQuorum?
    /// Its approvers' approvals so far, oldest first: each one's signed
    /// decision, checkable offline (proto/signing.md §11); nil without a
    /// quorum.
    public var approvals: [QuorumApproval]?

    enum CodingKeys: String, CodingKey {
        case ID, CreatedAt, UpdatedAt, DeletedAt, issuer, event, ip, location, timestamp, method, new, approved
        case signature, status, details, decision, assertion, acr, amr, channel, approvers, approvals
        case statusReason = "status_reason"
        case userVerification = "user_verification"
        case clientUserID = "client_user_id"
        case expiresAt = "expires_at"
        case requesterName = "requester_name"
        case decidedBy = "decided_by"
        case decidedAt = "decided_at"
    }

    /// The document for `event` as of `now`, with its token if settled.
    public init(_ event: ApprovalEvent, now: Date, signature: String?) {
        let status = event.status(at: now)
        self.ID = event.id
        self.CreatedAt = event.createdAt
        self.UpdatedAt = event.updatedAt
        self.DeletedAt = nil
        self.clientUserID = event.clientUserID
        self.issuer = event.issuer
        self.event = event.name
        self.ip = event.ip
        self.location = event.location
        self.timestamp = String(Int(event.createdAt.timeIntervalSince1970))
        self.method = event.method
        self.new = status == .pending
        self.approved = status == .approved
        self.signature = signature
        self.status = status
        self.expiresAt = event.expiresAt
        self.details = event.details
        self.requesterName = event.requesterName
        self.decidedBy = event.decidedBy
        self.decidedAt = event.decidedAt
        self.decision = event.decision
        self.statusReason = event.statusReason
        self.userVerification = event.userVerification ? "required" : nil
        self.assertion = event.assertion
        self.channel = event.channel
        self.approvers = event.quorum
        self.approvals = event.quorum == nil ? nil : event.approvals
        if status == .approved {
            let authentication = ApprovalAuthentication(of: event)
            self.acr = authentication.acr
            self.amr = authentication.amr
        }
    }
}

/// What a requester gets back when it creates an event: the event, and for
/// a pending one the secret to collect its outcome with.
public struct EventTicket: Codable, Sendable {
    public var event: EventDocument
    /// The secret that alone lets this requester collect the outcome; nil
    /// when the event was settled at creation.
    public var requesterToken: String?
    /// The number to show the user, if number matching is asked.
    public var matchNumber: String?

    enum CodingKeys: String, CodingKey {
        case event
        case requesterToken = "requester_token"
        case matchNumber = "match_number"
    }

    public init(event: EventDocument, requesterToken: String?, matchNumber: String?) {
        self.event = event
        self.requesterToken = requesterToken
        self.matchNumber = matchNumber
    }
}

/// A pending event as a trusted device's inbox shows it.
public struct InboxItem: Codable, Sendable, Equatable {
    public var event: EventDocument
    /// The app's name (its API key's name).
    public var app: String
    /// The nonce the decision must carry.
    public var nonce: String
    /// Whether approving needs the number the requester shows.
    public var matchRequired: Bool
    /// How many digits that number has (2, 6 for a pairing code or when
    /// number matching hardened: ``MatchNumberRule``).
    public var matchDigits: Int?
    /// For a pairing: the device an approval would add.
    public var newDevice: NewDeviceSummary?

    enum CodingKeys: String, CodingKey {
        case event, app, nonce
        case matchRequired = "match_required"
        case matchDigits = "match_digits"
        case newDevice = "new_device"
    }

    public init(
        event: EventDocument, app: String, nonce: String, matchRequired: Bool, matchDigits: Int? = nil,
        newDevice: NewDeviceSummary? = nil
    ) {
        self.event = event
        self.app = app
        self.nonce = nonce
        self.matchRequired = matchRequired
        self.matchDigits = matchDigits
        self.newDevice = newDevice
    }
}

/// The device a pairing would add, as the approving device shows it.
public struct NewDeviceSummary: Codable, Sendable, Equatable {
    /// The key's RFC 7638 thumbprint: the device id it would get, and the
    /// `jkt` an approval must carry.
    public var id: String
    /// The key's short fingerprint, for a person to compare with the new machine's screen.
    public var fingerprint: String
    public var name: String
    public var type: String

    public init(_ device: NewDevice) {
        id = device.publicKey.thumbprint
        fingerprint = device.publicKey.fingerprint
        name = device.name
        type = device.type
    }
}

/// A device as the REST API shows it.
public struct DeviceDocument: Codable, Sendable, Equatable {
    public var id: String
    public var clientUserID: String
    public var issuer: String
    public var name: String
    public var type: String
    public var publicKey: DevicePublicKey
    public var fingerprint: String
    public var createdAt: Date
    public var lastSeenAt: Date?
    public var revokedAt: Date?
    /// Set while the directory does not list its user as enabled.
    public var suspendedAt: Date?
    /// Whether the device has a push subscription (its endpoint is never shown).
    public var push: Bool?
    /// The passkey that protects its approvals, if it has one.
    public var passkey: PasskeyDocument?

    enum CodingKeys: String, CodingKey {
        case id, issuer, name, type, fingerprint, push, passkey
        case clientUserID = "client_user_id"
        case publicKey = "public_key"
        case createdAt = "created_at"
        case lastSeenAt = "last_seen_at"
        case revokedAt = "revoked_at"
        case suspendedAt = "suspended_at"
    }

    public init(_ device: TrustedDevice) {
        self.id = device.id
        self.clientUserID = device.clientUserID
        self.issuer = device.issuer
        self.name = device.name
        self.type = device.type
        self.publicKey = device.publicKey
        self.fingerprint = device.publicKey.fingerprint
        self.createdAt = device.createdAt
        self.lastSeenAt = device.lastSeenAt
        self.revokedAt = device.revokedAt
        self.suspendedAt = device.suspendedAt
        self.push = device.push != nil
        self.passkey = device.passkey.map(PasskeyDocument.init)
    }
}

/// A device's passkey as the API shows it: what a backend pins to check
/// stored assertions itself.
public struct PasskeyDocument: Codable, Sendable, Equatable {
    public var credentialID: String
    public var publicKey: DevicePublicKey
    /// The authenticator's model, as it says (unattested).
    public var aaguid: UUID
    /// Whether the credential may be synced to the owner's other devices.
    public var backupEligible: Bool
    public var createdAt: Date

    enum CodingKeys: String, CodingKey {
        case aaguid
        case credentialID = "credential_id"
        case publicKey = "public_key"
        case backupEligible = "backup_eligible"
        case createdAt = "created_at"
    }

    public init(_ passkey: Passkey) {
        credentialID = passkey.credentialID
        publicKey = passkey.publicKey
        aaguid = passkey.aaguid
        backupEligible = passkey.backupEligible
        createdAt = passkey.createdAt
    }
}

/// The body of every error response.
public struct ErrorDocument: Codable, Sendable, Equatable, Error {
    /// A stable machine-readable code, e.g. `invalid_proof`.
    public var error: String
    /// A sentence for a person.
    public var message: String

    public init(error: String, message: String) {
        self.error = error
        self.message = message
    }
}

/// One entry of a user's device audit log, as the REST API shows it.
public struct DeviceChangeDocument: Codable, Sendable, Equatable {
    public var deviceID: String
    public var deviceName: String
    /// `enrolled`, `revoked`, `passkey_added` or `passkey_removed`.
    public var action: DeviceChange.Action
    /// The acting device's id, or `backend`, `enrollment_token`, `verified_identifier`, `recovery_code`.
    public var actor: String
    public var ip: String
    public var at: Date

    enum CodingKeys: String, CodingKey {
        case action, actor, ip, at
        case deviceID = "device_id"
        case deviceName = "device_name"
    }

    public init(_ change: DeviceChange) {
        deviceID = change.deviceID
        deviceName = change.deviceName
        action = change.action
        actor = change.author.actor
        ip = change.author.ip
        at = change.at
    }
}

/// A user's devices as one of them sees them.
public struct DeviceListDocument: Codable, Sendable, Equatable {
    public var devices: [DeviceDocument]
    /// The id of the device that asked.
    public var thisDevice: String?

    enum CodingKeys: String, CodingKey {
        case devices
        case thisDevice = "this_device"
    }

    public init(devices: [DeviceDocument], thisDevice: String?) {
        self.devices = devices
        self.thisDevice = thisDevice
    }
}

extension EventDocument: WireJSONWritable {
    public func write(to object: inout WireJSON.Object) {
        object.field("CreatedAt", CreatedAt)
        object.field("DeletedAt", DeletedAt)
        object.field("ID", ID)
        object.field("UpdatedAt", UpdatedAt)
        object.field("acr", acr)
        if let amr { object.field("amr", amr) }
        if let approvals { object.field("approvals", approvals) }
        object.field("approved", approved)
        object.field("approvers", approvers)
        object.field("assertion", assertion)
        object.field("channel", channel?.rawValue)
        object.field("client_user_id", clientUserID)
        object.field("decided_at", decidedAt)
        object.field("decided_by", decidedBy)
        object.field("decision", decision)
        object.field("details", details)
        object.field("event", event)
        object.field("expires_at", expiresAt)
        object.field("ip", ip)
        object.field("issuer", issuer)
        object.field("location", location)
        object.field("method", method.rawValue)
        object.field("new", new)
        object.field("requester_name", requesterName)
        object.field("signature", signature)
        object.field("status", status.rawValue)
        object.field("status_reason", statusReason?.rawValue)
        object.field("timestamp", timestamp)
        object.field("user_verification", userVerification)
    }
}

extension PasskeyAssertion: WireJSONWritable {
    public func write(to object: inout WireJSON.Object) {
        object.field("authenticator_data", authenticatorData)
        object.field("client_data_json", clientDataJSON)
        object.field("credential_id", credentialID)
        object.field("signature", signature)
    }
}

extension PasskeyDocument: WireJSONWritable {
    public func write(to object: inout WireJSON.Object) {
        object.field("aaguid", aaguid.uuidString)
        object.field("backup_eligible", backupEligible)
        object.field("created_at", createdAt)
        object.field("credential_id", credentialID)
        object.field("public_key", publicKey)
    }
}

extension EventTicket: WireJSONWritable {
    public func write(to object: inout WireJSON.Object) {
        object.field("event", event)
        object.field("match_number", matchNumber)
        object.field("requester_token", requesterToken)
    }
}

extension InboxItem: WireJSONWritable {
    public func write(to object: inout WireJSON.Object) {
        object.field("app", app)
        object.field("event", event)
        object.field("match_digits", matchDigits)
        object.field("match_required", matchRequired)
        object.field("new_device", newDevice)
        object.field("nonce", nonce)
    }
}

extension NewDeviceSummary: WireJSONWritable {
    public func write(to object: inout WireJSON.Object) {
        object.field("fingerprint", fingerprint)
        object.field("id", id)
        object.field("name", name)
        object.field("type", type)
    }
}
