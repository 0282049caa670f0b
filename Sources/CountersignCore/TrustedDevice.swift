public import Foundation

/// A device whose key can approve events for one user of one app.
public struct TrustedDevice: Sendable, Equatable {
    /// RFC 7638 thumbprint of ``publicKey``.
    public var id: String
    /// The API key id of the app.
    public var issuer: String
    /// The app's id for the user.
    public var clientUserID: String
    public var publicKey: DevicePublicKey
    /// A name a person recognises, such as the host name.
    public var name: String
    /// `cli`, `phone`, … .
    public var type: String
    public var createdAt: Date
    public var lastSeenAt: Date?
    /// Set once; a revoked device can do nothing.
    public var revokedAt: Date?
    /// Set while the directory does not list its user as enabled: it can
    /// do nothing until they are again (``DirectorySync``).
    public var suspendedAt: Date?
    /// The device's TOTP secret, sealed by the broker (opaque to the store);
    /// nil until the device asked for one.
    public var sealedTOTPSecret: Data?
    /// The last time step whose code was accepted; older and equal steps
    /// are refused, so every code works once.
    public var lastTOTPStep: Int64?
    /// Where the device wants to be told of new requests; nil without.
    public var push: PushSubscription?
    /// The passkey that protects the device's approvals; nil without.
    public var passkey: Passkey?

    /// A device as a store read it back: `id` is the thumbprint of
    /// `publicKey`, computed when the device was enrolled.
    public init(
        storedID id: String, publicKey: DevicePublicKey, issuer: String, clientUserID: String, name: String,
        type: String, createdAt: Date, lastSeenAt: Date?, revokedAt: Date?, sealedTOTPSecret: Data?,
        lastTOTPStep: Int64?, push: PushSubscription? = nil, passkey: Passkey? = nil, suspendedAt: Date? = nil
    ) {
        self.id = id
        self.issuer = issuer
        self.clientUserID = clientUserID
        self.publicKey = publicKey
        self.name = name
        self.type = type
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.revokedAt = revokedAt
        self.sealedTOTPSecret = sealedTOTPSecret
        self.lastTOTPStep = lastTOTPStep
        self.push = push
        self.passkey = passkey
        self.suspendedAt = suspendedAt
    }

    public init(
        publicKey: DevicePublicKey, issuer: String, clientUserID: String, name: String, type: String,
        createdAt: Date, lastSeenAt: Date? = nil, revokedAt: Date? = nil, sealedTOTPSecret: Data? = nil,
        lastTOTPStep: Int64? = nil
    ) {
        self.init(
            storedID: publicKey.thumbprint, publicKey: publicKey, issuer: issuer, clientUserID: clientUserID,
            name: name, type: type, createdAt: createdAt, lastSeenAt: lastSeenAt, revokedAt: revokedAt,
            sealedTOTPSecret: sealedTOTPSecret, lastTOTPStep: lastTOTPStep)
    }

    /// Whether the device can act now: neither removed nor suspended.
    public var canAct: Bool { revokedAt == nil && suspendedAt == nil }

    /// Whether this device may act for `clientUserID` of `issuer`.
    public func belongs(toIssuer issuer: String, user clientUserID: String) -> Bool {
        self.issuer == issuer && self.clientUserID == clientUserID
    }
}
