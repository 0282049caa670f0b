public import CountersignCore
import CountersignPostgres
public import CountersignSQLite
public import CountersignStore
public import Foundation
public import Hummingbird
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

    public init(
        host: String = "127.0.0.1", port: Int = 8080, dataDirectory: String = "./countersign-data",
        publicURLs: [String] = [], policy: ApprovalPolicy = ApprovalPolicy(),
        durability: SQLiteStore.Durability = .full, logLevel: Logger.Level = .info, retention: TimeInterval = 30 * 86400
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
        return OpenedStore(store: try SQLiteStore(path: databasePath, durability: durability), close: {})
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
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw BrokerSetupError("cannot read the \(name) file \(file)")
        }
        return text.trimmingCharacters(in: .newlines)
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

/// Builds the broker's HTTP application on the configured store.
public func buildApplication(_ configuration: BrokerConfiguration) async throws -> some ApplicationProtocol {
    var logger = Logger(label: "device-broker")
    logger.logLevel = configuration.logLevel
    let opened = try await configuration.openStore(logger: logger)
    let store = opened.store
    let (issuer, origins) = try configuration.origins()
    let vault = try configuration.totpKeyFile.map(TOTPVault.load(file:))
    if vault == nil {
        logger.notice("no --totp-key-file: devices get no TOTP secrets and codes are refused")
    }
    let environment = BrokerEnvironment(
        store: store, policy: configuration.policy, issuer: issuer, origins: origins,
        keys: try await BrokerKeys.load(from: store, now: Date()),
        verification: configuration.verification, sender: try configuration.makeSender(logger: logger), vault: vault,
        metrics: configuration.metrics, trustedProxies: configuration.trustedProxies)
    let counter = ConnectionCounter(
        limits: configuration.connections, trustedProxies: configuration.trustedProxies, logger: logger)
    var app = Application(
        router: buildRouter(environment),
        server: try configuration.tls.map { try .tls(.brokerHTTP1(counter), tlsConfiguration: try serverTLS($0)) }
            ?? .brokerHTTP1(counter),
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port), serverName: "countersign"),
        logger: logger)
    // Services stop in reverse order: the server first, the store last.
    app.addServices(StoreCloser(close: opened.close))
    if let feed = store as? any WakeFeed {
        app.addServices(WakeRelay(feed: feed, hub: environment.hub, logger: logger))
    }
    app.addServices(GarbageCollector(environment: environment, retention: configuration.retention, logger: logger))
    app.addServices(KeyRefresher(environment: environment, logger: logger))
    return app
}

/// Re-reads the signing keys every 30 s, and at once when another instance
/// on a shared store says they changed, so that a rotation by
/// `device-broker keys rotate` reaches every running instance.
struct KeyRefresher: Service {
    let environment: BrokerEnvironment
    let logger: Logger

    func run() async throws {
        // Cancelled (another service failed, e.g. the port was taken) as
        // well as shut down: a wait returns at once then, and the loop
        // would spin.
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            let rotated = environment.hub.subscribe([WakeKey.signingKeys])
            await rotated.wait(timeout: .seconds(30))
            guard !Task.isShuttingDownGracefully, !Task.isCancelled else { return }
            do {
                let before = environment.keys.currentKeyID
                try await environment.keys.refresh(from: environment.store, now: environment.now())
                if environment.keys.currentKeyID != before {
                    logger.notice("now signing with key \(environment.keys.currentKeyID)")
                }
            } catch {
                logger.warning("could not re-read the signing keys", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// TLS 1.2+ with the operator's certificate chain and key.
private func serverTLS(_ files: (certificateFile: String, keyFile: String)) throws -> TLSConfiguration {
    do {
        let chain = try NIOSSLCertificate.fromPEMFile(files.certificateFile).map {
            NIOSSLCertificateSource.certificate($0)
        }
        let key = try NIOSSLPrivateKey(file: files.keyFile, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    } catch {
        throw BrokerSetupError(
            "cannot use the TLS certificate \(files.certificateFile) and key \(files.keyFile): \(error)")
    }
}

/// Closes the store once everything else has stopped.
struct StoreCloser: Service {
    let close: @Sendable () async -> Void

    func run() async throws {
        try? await gracefulShutdown()
        await close()
    }
}

/// Wakes this instance's long-polls on changes committed through any
/// instance sharing the store.
struct WakeRelay: Service {
    let feed: any WakeFeed
    let hub: WakeHub
    let logger: Logger

    func run() async throws {
        let hub = hub
        try await cancelWhenGracefulShutdown {
            try await feed.followChanges(wake: { hub.notify($0) }, resync: { hub.notifyAll() })
        }
    }
}

/// Builds the router; tests build the same one around their own environment.
///
/// Every route passes through one ``RequestLifecycleMiddleware``; on the
/// authenticated API it also establishes the caller, in the same frame
/// rather than in a middleware layer of its own (see docs/benchmarks.md).
/// Each group therefore adds its own, and the router's is added last, which
/// gives it only to requests no route matches.
public func buildRouter(_ environment: BrokerEnvironment) -> Router<BrokerRequestContext> {
    let router = Router(context: BrokerRequestContext.self)
    let lifecycle = RequestLifecycleMiddleware(
        trustedProxies: TrustedProxies(networks: environment.trustedProxies), metrics: HTTPMetrics())
    let open = router.group().add(middleware: lifecycle)
    open.addRoutes(OperationsController(environment: environment).endpoints)
    open.get(".well-known/jwks.json") { _, _ in
        JSONBody(environment.keys.jwks, headers: [.cacheControl: "public, max-age=300"])
    }
    open.addRoutes(VerificationPageController(environment: environment).endpoints)
    open.addRoutes(OAuthController(environment: environment).endpoints)
    open.group("api/v0").addRoutes(IdentityController(environment: environment).endpoints)
    open.group("api/v1").addRoutes(EnrollmentController(environment: environment).deviceEndpoints)
    var authenticating = lifecycle
    authenticating.authenticator = CallerAuthenticator(environment: environment)
    let authenticated = router.group("api/v1").add(middleware: authenticating)
    authenticated.addRoutes(EventController(environment: environment).endpoints)
    authenticated.addRoutes(DecisionController(environment: environment).endpoints)
    let codes = CodeController(environment: environment)
    authenticated.addRoutes(codes.eventEndpoints)
    let backend = authenticated.group(context: BackendRequestContext.self)
    backend.addRoutes(EnrollmentController(environment: environment).backendEndpoints)
    backend.addRoutes(BackendController(environment: environment).endpoints)
    backend.addRoutes(APIKeyController(environment: environment).endpoints)
    backend.addRoutes(codes.backendEndpoints)
    let device = authenticated.group(context: DeviceRequestContext.self)
    device.addRoutes(InboxController(environment: environment).endpoints)
    device.addRoutes(codes.deviceEndpoints)
    var unmatched = lifecycle
    unmatched.routeMethods = RouteMethods(router.routes)
    router.add(middleware: unmatched)
    return router
}

/// Deletes what has expired, once a minute, until shutdown.
struct GarbageCollector: Service {
    let environment: BrokerEnvironment
    let retention: TimeInterval
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            let now = environment.now()
            do {
                let removed = try await environment.store.garbageCollect(now: now, eventsEndedBefore: now - retention)
                if removed > 0 { logger.debug("garbage collected", metadata: ["rows": "\(removed)"]) }
            } catch {
                logger.warning("garbage collection failed", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(60)) }
        }
    }
}
