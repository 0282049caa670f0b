import CountersignCore
public import Crypto
import Foundation

/// Seals devices' TOTP secrets for the store: AES-256-GCM under the key
/// from the broker's configuration (`--totp-key-file`), kept away from the
/// database, so a copy of the database alone yields no secret.
///
/// A sealed secret is `0x01 ‖ key id (8 bytes) ‖ nonce ‖ ciphertext ‖ tag`,
/// authenticated together with the device id: a sealed secret copied onto
/// another device's row does not open.
public struct TOTPVault: Sendable {
    let key: SymmetricKey
    let keyID: Data

    public init(key: SymmetricKey) {
        self.key = key
        self.keyID = Data(
            key.withUnsafeBytes { SHA256.hash(data: Data("countersign-totp-key".utf8) + Data($0)) }.prefix(8))
    }

    /// Reads a key file: 32 random bytes, base64, on one line.
    public static func load(file: String) throws -> TOTPVault {
        let text = try SecretFile.read(file, holding: "TOTP key")
        guard let bytes = Data(base64Encoded: text.trimmingCharacters(in: .whitespaces)),
            bytes.count == 32
        else {
            throw BrokerSetupError(
                "the TOTP key file \(file) must hold 32 bytes in base64 (device-broker totp-key generate makes one)")
        }
        return TOTPVault(key: SymmetricKey(data: bytes))
    }

    /// Writes a new random key file, readable by its owner only; never
    /// replaces an existing file (secrets sealed under it would be lost).
    public static func generateKeyFile(at path: String) throws {
        let line = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() } + "\n"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else {
            throw BrokerSetupError(
                errno == EEXIST ? "\(path) exists; a TOTP key is never overwritten" : "cannot create \(path)")
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        try handle.write(contentsOf: Data(line.utf8))
        try handle.synchronize()
    }

    func seal(_ secret: TOTPSecret, deviceID: String) throws -> Data {
        let box = try AES.GCM.seal(
            Data(secret.value.utf8), using: key, authenticating: Self.associatedData(deviceID))
        return Data([1]) + keyID + box.combined!
    }

    func unseal(_ sealed: Data, deviceID: String) throws -> TOTPSecret {
        guard sealed.count > 9, sealed.first == 1, sealed.dropFirst().prefix(8) == keyID else {
            throw VaultError("the TOTP secret of \(deviceID) was sealed under another key")
        }
        let box = try AES.GCM.SealedBox(combined: sealed.dropFirst(9))
        let plain = try AES.GCM.open(box, using: key, authenticating: Self.associatedData(deviceID))
        guard let secret = TOTPSecret(String(decoding: plain, as: UTF8.self)) else {
            throw VaultError("the TOTP secret of \(deviceID) is malformed")
        }
        return secret
    }

    private static func associatedData(_ deviceID: String) -> Data {
        Data("countersign-totp\u{0}\(deviceID)".utf8)
    }

    struct VaultError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
