public import CountersignCore
import CountersignPostgres
public import CountersignSQLite
public import CountersignSenders
public import CountersignStore
public import Foundation
import Hummingbird
import HummingbirdTLS
public import Logging
import NIOSSL
import ServiceLifecycle

/// Everything `device-broker serve` can be told.
public struct BrokerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Where the SQLite file lives.
    public var dataDirectory: String
    /// A `postgres://` URL to use PostgreSQL (shared by several instances)
    /// instead of the SQLite file.
    public var databaseURL: String?
    /// PostgreSQL connections the instance keeps open, one of them on
    /// LISTEN; at least 2.
    public var databaseConnections = 20
    /// URLs clients reach the broker at; the first is the token issuer.
    /// Empty means `http://host:port` (and `localhost` for a loopback host).
    public var publicURLs: [String]
    public var policy: ApprovalPolicy
    public var durability: SQLiteStore.Durability
    public var logLevel: Logger.Level
    /// How long settled events are kept.
    public var retention: TimeInterval
    /// How long decided events are kept unless `--retention` says otherwise.
    public static let defaultRetention: TimeInterval = 30 * 86400
    /// Where one-time codes go.
    public var sender: SenderConfiguration = .development
    /// Where codes for phone numbers go, if not to ``sender``.
    public var phoneSender: SenderConfiguration?
    /// Code lifetime, tries and send limits of email/phone verification.
    public var verification = VerificationPolicy()
    /// The key file that TOTP secrets are sealed under; without one the
    /// broker offers no TOTP codes.
    public var totpKeyFile: String?
    /// What `/metrics` shows (the registry the process bootstrapped
    /// swift-metrics with); nil serves no metrics.
    public var metrics: BrokerMetrics = BrokerMetrics()
    /// Serve HTTPS with this PEM certificate chain and private key.
    public var tls: (certificateFile: String, keyFile: String)?
    /// Reverse proxies whose `X-Forwarded-For` header is believed.
    public var trustedProxies: [IPNetwork] = []
    /// How many connections are held, and how long each may make the broker wait.
    public var connections = ConnectionLimits()
    /// Web Push to devices.
    public var push = PushConfiguration()
    /// Sends webhooks to endpoints on loopback, private and link-local
    /// addresses too (an app backend on the operator's own network); a
    /// broker whose public URL is on loopback always does (development).
    public var allowPrivateWebhookEndpoints = false
    /// Answers RADIUS on this UDP address; nil (the default) does not.
    public var radius: RADIUSListenerConfiguration?
    /// Reads its people from this directory on a schedule; nil (the
    /// default) reads none.
    public var directory: DirectorySettings?

    public init(
        host: String = "127.0.0.1", port: Int = 8080, dataDirectory: String = "./countersign-data",
        publicURLs: [String] = [], policy: ApprovalPolicy = ApprovalPolicy(),
        durability: SQLiteStore.Durability = .full, logLevel: Logger.Level = .info,
        retention: TimeInterval = BrokerConfiguration.defaultRetention
    ) {
        self.host = host
        self.port = port
        self.dataDirectory = dataDirectory
        self.publicURLs = publicURLs
        self.policy = policy
        self.durability = durability
        self.logLevel = logLevel
        self.retention = retention
    }

    /// The SQLite file in the data directory.
    public var databasePath: String { (dataDirectory as NSString).appendingPathComponent("countersign.sqlite") }

    /// The issuer URL and every origin proofs may name.
    public func origins() throws -> (issuer: String, origins: Set<Origin>) {
        var urls = publicURLs
        if urls.isEmpty {
            let bracketed = host.contains(":") ? "[\(host)]" : host
            let scheme = tls == nil ? "http" : "https"
            urls = ["\(scheme)://\(bracketed):\(port)"]
            if ["127.0.0.1", "::1", "localhost"].contains(host) {
                urls += ["localhost", "127.0.0.1", "[::1]"].map { "\(scheme)://\($0):\(port)" }
            }
        }
        var origins: Set<Origin> = []
        for url in urls {
            guard let origin = Origin(url: url) else { throw BrokerSetupError("not an http(s) URL: \(url)") }
            origins.insert(origin)
        }
        // A broker known first by a loopback URL (on one machine, or as
        // README's container command names it) answers at each loopback
        // name of it, as the default does: its web approver is linked at
        // localhost (where browsers keep passkeys), its agents may say
        // 127.0.0.1. A broker whose issuer is elsewhere keeps its list.
        if let issuer = Origin(url: urls[0]), issuer.isLoopback {
            for origin in origins where origin.isLoopback {
                for alias in ["localhost", "127.0.0.1", "[::1]"] {
                    origins.insert(Origin(url: "\(origin.scheme)://\(alias):\(origin.port)")!)
                }
            }
        }
        return (Origin(url: urls[0])!.description, origins)
    }

    /// Opens and migrates the configured store: PostgreSQL with a
    /// ``databaseURL``, else the SQLite file in the data directory (created
    /// with mode 0700). Close it when done.
    public func openStore(logger: Logger) async throws -> OpenedStore {
        if let databaseURL {
            let store = try PostgresStore(url: databaseURL, logger: logger, maximumConnections: databaseConnections)
            do {
                try await store.migrate()
            } catch {
                await store.close()
                throw error
            }
            return OpenedStore(store: store, close: store.close)
        }
        try FileManager.default.createDirectory(
            atPath: dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let store: SQLiteStore
        do {
            store = try SQLiteStore(path: databasePath, durability: durability)
        } catch let error as StoreError where error.code == .backend {
            // One line that says what to do: the broker cannot fix a file
            // it does not understand, and must not write to it.
            throw BrokerSetupError(
                "\(error.message); restore the file from a backup (device-broker backup), "
                    + "or point --data-dir at another directory")
        }
        logger.notice("keeping everything in the SQLite file \(databasePath)")
        return OpenedStore(store: store, close: {})
    }
}

/// A store ready for use, and how to let go of it.
public struct OpenedStore: Sendable {
    public let store: any CountersignStore
    public let close: @Sendable () async -> Void
}

/// Which channel delivers one-time codes.
public enum SenderConfiguration: Sendable {
    /// The log and `outbox.jsonl` in the data directory: for development.
    case development
    /// A signed JSON POST to `url` (see ``WebhookSender``), the secret read from a file.
    case webhook(url: String, secretFile: String)
    /// Email through a mail server (see ``SMTPSender``), the password read from a file.
    case smtp(SMTPSettings, passwordFile: String?)

    func makeSender(dataDirectory: String, logger: Logger) throws -> any CodeSender {
        switch self {
        case .development:
            let outbox = URL(fileURLWithPath: dataDirectory).appendingPathComponent("outbox.jsonl")
            logger.notice(
                "one-time codes go to the development sender: the log and \(outbox.path); use --sender smtp or webhook in production"
            )
            return DevelopmentSender(outbox: outbox, logger: logger)
        case .webhook(let url, let secretFile):
            return try WebhookSender(
                url: url, secret: Data(try SecretFile.read(secretFile, holding: "webhook secret").utf8))
        case .smtp(var settings, let passwordFile):
            if let passwordFile { settings.password = try SecretFile.read(passwordFile, holding: "SMTP password") }
            return try SMTPSender(settings: settings)
        }
    }
}

/// Secrets the operator keeps in files (passwords, HMAC and TOTP keys).
enum SecretFile {
    /// The file's content without its final line break.
    static func read(_ file: String, holding name: String) throws -> String {
        let handle = open(file, O_RDONLY | O_CLOEXEC)
        guard handle >= 0 else { throw BrokerSetupError(unreadable(file, holding: name, errno: errno)) }
        close(handle)
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw BrokerSetupError("cannot read the \(name) file \(file): it is not UTF-8 text")
        }
        return text.trimmingCharacters(in: .newlines)
    }

    /// Why a secret file cannot be opened, and what to do: a key file is
    /// its owner's only (the package's TOTP key is root's, and systemd
    /// hands the service a copy with `LoadCredential`), so a broker started
    /// by hand as another user meets a permission error.
    static func unreadable(_ file: String, holding name: String, errno code: Int32) -> String {
        let reason = String(cString: strerror(code))
        var owner = ""
        if let attributes = try? FileManager.default.attributesOfItem(atPath: file),
            let mode = attributes[.posixPermissions] as? Int
        {
            let name =
                attributes[.ownerAccountName] as? String
                ?? (attributes[.ownerAccountID] as? NSNumber).map { "uid \($0)" } ?? "?"
            owner = ", owned by \(name), mode \(String(mode & 0o777, radix: 8))"
        }
        let advice =
            code == EACCES || code == EPERM
            ? "; this process runs as uid \(geteuid()). The systemd unit hands the service a copy of the key "
                + "(LoadCredential); started otherwise, the broker's user must be able to read it (for the "
                + "package: chgrp countersign \(file) && chmod 0640 \(file))"
            : ""
        return "cannot read the \(name) file \(file): \(reason)\(owner)\(advice)"
    }
}

extension BrokerConfiguration {
    /// The senders for email and phone, as configured.
    func makeSender(logger: Logger) throws -> any CodeSender {
        let email = try sender.makeSender(dataDirectory: dataDirectory, logger: logger)
        guard let phoneSender else { return email }
        return RoutingSender(
            email: email, phone: try phoneSender.makeSender(dataDirectory: dataDirectory, logger: logger))
    }
}

/// A configuration the broker cannot start with.
public struct BrokerSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
