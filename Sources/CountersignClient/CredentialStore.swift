import CountersignCore
import Crypto
public import Foundation

/// The agent's key files: one JSON file per account (broker, app, user),
/// mode 0600 in a directory of mode 0700.
public struct CredentialStore: Sendable {
    /// The directory holding the files.
    public let directory: URL

    public init(directory: URL) {
        self.directory = directory
    }

    /// `$COUNTERSIGN_AGENT_DIR`, else `$XDG_CONFIG_HOME/countersign`, else
    /// `~/.config/countersign`.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let explicit = environment["COUNTERSIGN_AGENT_DIR"], !explicit.isEmpty {
            return URL(fileURLWithPath: explicit)
        }
        let base =
            environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config")
        return base.appendingPathComponent("countersign")
    }

    /// What the file holds. The private key and TOTP secret are either in
    /// the clear (`private_key_pem`, `totp_secret`) or sealed together in
    /// `protected` with AES-256-GCM under a key derived from the PIN,
    /// authenticated with the account it belongs to.
    struct File: Codable {
        var broker: String
        var apiKeyID: String
        var clientUserID: String
        var name: String
        var deviceID: String
        var privateKeyPEM: String?
        var totpSecret: TOTPSecret?
        var protected: Sealed?

        enum CodingKeys: String, CodingKey {
            case broker, name, protected
            case apiKeyID = "api_key_id"
            case clientUserID = "client_user_id"
            case deviceID = "device_id"
            case privateKeyPEM = "private_key_pem"
            case totpSecret = "totp_secret"
        }

        struct Sealed: Codable {
            var kdf = "scrypt"
            var n: Int
            var r: Int
            var p: Int
            var salt: Data
            var box: Data
        }

        /// The secrets a PIN seals.
        struct Secrets: Codable {
            var privateKeyPEM: String
            var totpSecret: TOTPSecret?
            enum CodingKeys: String, CodingKey {
                case privateKeyPEM = "private_key_pem"
                case totpSecret = "totp_secret"
            }
        }

        /// Binds sealed secrets to their account: a box moved into another
        /// account's file does not open.
        var associatedData: Data {
            Data("countersign-agent\n\(broker)\n\(apiKeyID)\n\(clientUserID)\n\(deviceID)".utf8)
        }
    }

    /// Writes a credential atomically, readable by its owner only; sealed
    /// under its PIN if it has one.
    public func save(_ credential: DeviceCredential) throws {
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var file = File(
            broker: credential.broker, apiKeyID: credential.apiKeyID, clientUserID: credential.clientUserID,
            name: credential.name, deviceID: credential.deviceID)
        let secrets = File.Secrets(
            privateKeyPEM: credential.privateKey.pemRepresentation, totpSecret: credential.totpSecret)
        if let protection = credential.protection {
            let box = try AES.GCM.seal(
                try JSONEncoder().encode(secrets), using: protection.key, authenticating: file.associatedData)
            file.protected = File.Sealed(
                n: protection.rounds, r: protection.blockSize, p: protection.parallelism, salt: protection.salt,
                box: box.combined!)
        } else {
            file.privateKeyPEM = secrets.privateKeyPEM
            file.totpSecret = secrets.totpSecret
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(file)
        let target = url(broker: credential.broker, apiKeyID: credential.apiKeyID, user: credential.clientUserID)
        let temporary = directory.appendingPathComponent(".\(UUID().uuidString).tmp")
        // Created with 0600 from the start: the key is never readable by others, not even briefly.
        guard
            FileManager.default.createFile(
                atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600])
        else {
            throw CountersignError(status: 0, code: "config_unwritable", message: "cannot write \(temporary.path)")
        }
        guard rename(temporary.path, target.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw CountersignError(status: 0, code: "config_unwritable", message: "cannot write \(target.path)")
        }
    }

    /// All accounts in the directory, without opening their keys.
    public func accounts() throws -> [StoredAccount] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return [] }
        return try names.filter { $0.hasPrefix("account-") && $0.hasSuffix(".json") }.sorted().map {
            let url = directory.appendingPathComponent($0)
            return StoredAccount(file: try read(url), url: url)
        }
    }

    /// The accounts matching every filter given.
    public func matching(broker: String?, apiKeyID: String?, user: String?) throws -> [StoredAccount] {
        try accounts().filter {
            (broker == nil || Origin(url: $0.broker) == Origin(url: broker!))
                && (apiKeyID == nil || $0.apiKeyID == apiKeyID)
                && (user == nil || $0.clientUserID == user)
        }
    }

    /// Opens an account's key: `pin_required` if it is sealed and no PIN
    /// is given, `wrong_pin` if the PIN does not open it. Reading never
    /// writes, so a wrong PIN leaves the file as it was.
    public func unlock(_ account: StoredAccount, pin: String?) throws -> DeviceCredential {
        let file = try read(account.url)
        let secrets: File.Secrets
        var protection: PINProtection?
        if let sealed = file.protected {
            guard let pin else {
                throw CountersignError(status: 0, code: "pin_required", message: "this key file is protected by a PIN")
            }
            guard sealed.kdf == "scrypt" else {
                throw CountersignError(status: 0, code: "config_unreadable", message: "unknown kdf \(sealed.kdf)")
            }
            let derived = try PINProtection(
                pin: pin, salt: sealed.salt, rounds: sealed.n, blockSize: sealed.r, parallelism: sealed.p)
            do {
                let plain = try AES.GCM.open(
                    try AES.GCM.SealedBox(combined: sealed.box), using: derived.key,
                    authenticating: file.associatedData)
                secrets = try JSONDecoder().decode(File.Secrets.self, from: plain)
            } catch {
                throw CountersignError(status: 0, code: "wrong_pin", message: "wrong PIN; the key file is unchanged")
            }
            protection = derived
        } else {
            guard let pem = file.privateKeyPEM else {
                throw CountersignError(
                    status: 0, code: "config_unreadable", message: "the key file \(account.url.path) holds no key")
            }
            secrets = File.Secrets(privateKeyPEM: pem, totpSecret: file.totpSecret)
        }
        do {
            var credential = DeviceCredential(
                broker: file.broker, apiKeyID: file.apiKeyID, clientUserID: file.clientUserID,
                privateKey: try P256.Signing.PrivateKey(pemRepresentation: secrets.privateKeyPEM), name: file.name,
                totpSecret: secrets.totpSecret)
            credential.protection = protection
            return credential
        } catch {
            throw CountersignError(
                status: 0, code: "config_unreadable", message: "cannot read the key in \(account.url.path): \(error)")
        }
    }

    /// Deletes the credential of one account.
    public func remove(_ credential: DeviceCredential) throws {
        try FileManager.default.removeItem(
            at: url(broker: credential.broker, apiKeyID: credential.apiKeyID, user: credential.clientUserID))
    }

    private func read(_ url: URL) throws -> File {
        do {
            return try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
        } catch {
            throw CountersignError(
                status: 0, code: "config_unreadable", message: "cannot read the key file \(url.path): \(error)")
        }
    }

    private func url(broker: String, apiKeyID: String, user: String) -> URL {
        let account = "\(Origin(url: broker)?.description ?? broker)\n\(apiKeyID)\n\(user)"
        let digest = SHA256.hash(data: Data(account.utf8)).prefix(12).map { String(format: "%02x", $0) }.joined()
        return directory.appendingPathComponent("account-\(digest).json")
    }
}

/// One account's key file, read without opening the key.
public struct StoredAccount: Sendable {
    public let broker: String
    public let apiKeyID: String
    public let clientUserID: String
    public let name: String
    public let deviceID: String
    /// Whether opening the key needs the PIN.
    public let isPINProtected: Bool
    let url: URL

    init(file: CredentialStore.File, url: URL) {
        broker = file.broker
        apiKeyID = file.apiKeyID
        clientUserID = file.clientUserID
        name = file.name
        deviceID = file.deviceID
        isPINProtected = file.protected != nil
        self.url = url
    }
}
