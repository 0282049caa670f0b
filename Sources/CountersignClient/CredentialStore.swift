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

    struct File: Codable {
        var broker: String
        var apiKeyID: String
        var clientUserID: String
        var name: String
        var deviceID: String
        var privateKeyPEM: String

        enum CodingKeys: String, CodingKey {
            case broker, name
            case apiKeyID = "api_key_id"
            case clientUserID = "client_user_id"
            case deviceID = "device_id"
            case privateKeyPEM = "private_key_pem"
        }
    }

    /// Writes a credential atomically, readable by its owner only.
    public func save(_ credential: DeviceCredential) throws {
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let file = File(
            broker: credential.broker, apiKeyID: credential.apiKeyID, clientUserID: credential.clientUserID,
            name: credential.name, deviceID: credential.deviceID, privateKeyPEM: credential.privateKey.pemRepresentation
        )
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

    /// All credentials in the directory.
    public func all() throws -> [DeviceCredential] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return [] }
        return try names.filter { $0.hasPrefix("account-") && $0.hasSuffix(".json") }.sorted().map {
            try load(directory.appendingPathComponent($0))
        }
    }

    /// The credentials matching every filter given.
    public func matching(broker: String?, apiKeyID: String?, user: String?) throws -> [DeviceCredential] {
        try all().filter {
            (broker == nil || Origin(url: $0.broker) == Origin(url: broker!))
                && (apiKeyID == nil || $0.apiKeyID == apiKeyID)
                && (user == nil || $0.clientUserID == user)
        }
    }

    /// Deletes the credential of one account.
    public func remove(_ credential: DeviceCredential) throws {
        try FileManager.default.removeItem(
            at: url(broker: credential.broker, apiKeyID: credential.apiKeyID, user: credential.clientUserID))
    }

    private func load(_ url: URL) throws -> DeviceCredential {
        do {
            let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
            let key = try P256.Signing.PrivateKey(pemRepresentation: file.privateKeyPEM)
            return DeviceCredential(
                broker: file.broker, apiKeyID: file.apiKeyID, clientUserID: file.clientUserID, privateKey: key,
                name: file.name)
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
