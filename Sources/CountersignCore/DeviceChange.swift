public import Foundation

/// Who changed a user's devices, and from where: what the audit log keeps
/// with every change.
public struct ChangeAuthor: Sendable, Equatable {
    /// The acting device's id, or ``backend``, ``enrollmentToken`` or
    /// ``verifiedIdentifier``.
    public var actor: String
    /// The client address the change came from.
    public var ip: String

    public init(actor: String, ip: String) {
        self.actor = actor
        self.ip = ip
    }

    /// The app backend, with its secret key.
    public static let backend = "backend"
    /// A device enrolled itself with a one-time enrollment token.
    public static let enrollmentToken = "enrollment_token"
    /// A command run on the broker's host.
    public static let host = "host"
    /// An operator, from the console: `operator:` and their name.
    public static func consoleOperator(_ name: String) -> String { "operator:" + name }
    /// A first device enrolled after its user verified an email address or phone number.
    public static let verifiedIdentifier = "verified_identifier"
    /// A device enrolled itself with one of the user's recovery codes.
    public static let recoveryCode = "recovery_code"
    /// The directory sync: the user was disabled there, left it, or came
    /// back.
    public static let directory = "directory"
}

/// One entry of a user's device audit log.
public struct DeviceChange: Sendable, Equatable {
    public enum Action: String, Codable, Sendable {
        case enrolled
        case revoked
        /// The device's owner protected its approvals with a passkey, or
        /// replaced the one that did.
        case passkeyAdded = "passkey_added"
        /// The device's passkey was turned off (not by the device's removal,
        /// which says `revoked`).
        case passkeyRemoved = "passkey_removed"
        /// The directory no longer lists the user as enabled: the device
        /// can do nothing until they are (nothing is deleted).
        case suspended
        /// The directory lists the user as enabled again.
        case reinstated
    }

    public var issuer: String
    public var clientUserID: String
    public var deviceID: String
    /// The device's name when it changed.
    public var deviceName: String
    public var action: Action
    public var author: ChangeAuthor
    public var at: Date
    /// The key an enrollment added, sent with the `device.enrolled` webhook
    /// so that an app can pin it; not kept in the audit log.
    public var publicKey: DevicePublicKey?
    /// The passkey a `passkey_added` change registered, sent with its
    /// `device.passkey_added` webhook so that an app can pin it before any
    /// approval needs it; not kept in the audit log.
    public var passkey: Passkey?

    public init(
        issuer: String, clientUserID: String, deviceID: String, deviceName: String, action: Action,
        author: ChangeAuthor, at: Date
    ) {
        self.issuer = issuer
        self.clientUserID = clientUserID
        self.deviceID = deviceID
        self.deviceName = deviceName
        self.action = action
        self.author = author
        self.at = at
    }
}

extension DeviceChange {
    /// The record of `device` being enrolled or revoked by `author`.
    public init(_ action: Action, of device: TrustedDevice, by author: ChangeAuthor, at: Date) {
        self.init(
            issuer: device.issuer, clientUserID: device.clientUserID, deviceID: device.id, deviceName: device.name,
            action: action, author: author, at: at)
        if action == .enrolled { publicKey = device.publicKey }
        if action == .passkeyAdded { passkey = device.passkey }
    }
}
