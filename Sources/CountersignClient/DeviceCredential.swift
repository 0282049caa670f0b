public import CountersignCore
public import Crypto
import CryptoExtras
import Foundation

/// A device's key for one account (broker, app, user), as the agent keeps it.
public struct DeviceCredential: Sendable {
    /// The broker's base URL.
    public var broker: String
    /// The app's API key id.
    public var apiKeyID: String
    /// The app's id for the user.
    public var clientUserID: String
    /// The device's P-256 private key; it never leaves the device.
    public var privateKey: P256.Signing.PrivateKey
    /// The name the device enrolled with.
    public var name: String
    /// The device's TOTP secret, once the broker gave it one.
    public var totpSecret: TOTPSecret?
    /// The key the file is sealed under, when a PIN protects it.
    var protection: PINProtection?

    public init(
        broker: String, apiKeyID: String, clientUserID: String, privateKey: P256.Signing.PrivateKey, name: String,
        totpSecret: TOTPSecret? = nil
    ) {
        self.broker = broker
        self.apiKeyID = apiKeyID
        self.clientUserID = clientUserID
        self.privateKey = privateKey
        self.name = name
        self.totpSecret = totpSecret
    }

    /// The device id: the thumbprint of the public key.
    public var deviceID: String { publicKey.thumbprint }
    /// The public key as a JWK.
    public var publicKey: DevicePublicKey { DevicePublicKey(privateKey.publicKey) }

    /// Whether the key file is sealed under a PIN.
    public var isPINProtected: Bool { protection != nil }

    /// Protects the key file with `pin` from the next save on (a new salt
    /// each time), or removes the protection with nil.
    public mutating func setPIN(_ pin: String?) throws {
        protection = try pin.map { try PINProtection(pin: $0) }
    }
}

/// A key derived from a PIN with scrypt: N = 2^15, r = 8, p = 1 (32 MiB,
/// about 0.1 s here), so each guess at a stolen file costs that much.
struct PINProtection: Sendable {
    static let minimumLength = 6

    let salt: Data
    let rounds: Int
    let blockSize: Int
    let parallelism: Int
    let key: SymmetricKey

    /// A new protection for `pin`, with a fresh random salt.
    init(pin: String) throws {
        guard pin.count >= Self.minimumLength else {
            throw CountersignError(
                status: 0, code: "pin_too_short", message: "a PIN has at least \(Self.minimumLength) characters")
        }
        try self.init(
            pin: pin, salt: Data(SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) }), rounds: 1 << 15,
            blockSize: 8, parallelism: 1)
    }

    /// The protection a key file was sealed with, from the PIN typed now.
    init(pin: String, salt: Data, rounds: Int, blockSize: Int, parallelism: Int) throws {
        guard rounds >= 1 << 14, rounds <= 1 << 20, rounds.nonzeroBitCount == 1, (1...16).contains(blockSize),
            (1...4).contains(parallelism), salt.count >= 16
        else {
            throw CountersignError(status: 0, code: "config_unreadable", message: "unusable scrypt parameters")
        }
        self.salt = salt
        self.rounds = rounds
        self.blockSize = blockSize
        self.parallelism = parallelism
        self.key = try KDF.Scrypt.deriveKey(
            from: Data(pin.utf8), salt: salt, outputByteCount: 32, rounds: rounds, blockSize: blockSize,
            parallelism: parallelism)
    }
}
