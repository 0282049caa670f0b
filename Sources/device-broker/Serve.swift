public import ArgumentParser
import CountersignBroker
import CountersignCore
public import CountersignSQLite
import Foundation
import Hummingbird
public import Logging
import Metrics
import Prometheus

extension DeviceBroker {
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the broker (SQLite file under --data-dir by default).")

        @OptionGroup var store: StoreOptions

        @Option(help: "Address to listen on.")
        var host = "127.0.0.1"

        @Option(help: "Port to listen on.")
        var port = 8080

        @Option(
            name: .customLong("public-url"),
            help: "URL clients use to reach the broker; repeat for several. The first is the token issuer.")
        var publicURLs: [String] = []

        @Option(help: "How long a pending request waits for a decision, e.g. 60s, 2m.")
        var approvalWindow = DurationArgument(seconds: ApprovalPolicy().window)

        @Option(
            help: ArgumentHelp(
                "After a \"this wasn't me\" answer, how long requesters cannot open requests for that user.",
                discussion:
                    "The user's other pending requests are rejected at once; the app backend's own requests (made with its secret) still go through."
            ))
        var fraudProtection = DurationArgument(seconds: FraudProtection.defaultDuration)

        @Option(
            help: """
                Pending requests one user may have at once: of the app backend's own, and of requesters' \
                (the API key id alone) from one address.
                """)
        var maxPending = PendingLimits().perUser

        @Option(help: "Requesters' pending requests one user may have at once, from all addresses together.")
        var maxRequesterPending = PendingLimits().perUserFromRequesters

        @Option(help: "Requesters' pending requests from one client address, for all users.")
        var maxPendingPerAddress = PendingLimits().perAddress

        @Option(help: "Requests requesters may make for one user in an hour, answered or not.")
        var maxRequestsPerUser = PendingLimits().requestsPerUser

        @Option(help: "Requests requesters may make from one client address in an hour, for all users.")
        var maxRequestsPerAddress = PendingLimits().requestsPerAddress

        @Option(help: "full: fsync every commit (survives power loss); relaxed: survives a broker crash only.")
        var durability: SQLiteStore.Durability = .full

        @Option(
            help: """
                With --database: PostgreSQL connections this instance keeps open, one of them on LISTEN \
                (env COUNTERSIGN_DATABASE_CONNECTIONS, at least 2).
                """)
        var databaseConnections: Int =
            ProcessEnvironment.value("COUNTERSIGN_DATABASE_CONNECTIONS").flatMap { Int($0) }
            ?? 20

        @Option(help: "How long decided events are kept, e.g. 30d.")
        var retention = DurationArgument(seconds: BrokerConfiguration.defaultRetention)

        @Option(help: "trace, debug, info, notice, warning, error or critical.")
        var logLevel: Logger.Level = .info

        @Option(help: "text (for people) or json (one object per line, for log shippers).")
        var logFormat: LogFormat = .text

        @Option(help: "How long an emailed or texted one-time code can be typed, e.g. 5m.")
        var codeLifetime = DurationArgument(seconds: VerificationPolicy().codeLifetime)

        @Option(
            name: .customLong("totp-key-file"),
            help: """
                A file holding the key TOTP secrets are sealed under (env COUNTERSIGN_TOTP_KEY_FILE; \
                make one with `device-broker totp-key generate FILE`). Keep it away from the data \
                directory and its backups. Without it, devices get no TOTP codes.
                """)
        var totpKeyFile: String?

        @Option(help: "Serve HTTPS with this PEM certificate chain (with --tls-key).")
        var tlsCertificate: String?

        @Option(help: "The PEM private key of --tls-certificate.")
        var tlsKey: String?

        @Option(
            name: .customLong("trusted-proxy"),
            help: """
                An address or CIDR range of a reverse proxy whose X-Forwarded-For header is believed; \
                repeat for several. Without one the header is ignored.
                """)
        var trustedProxies: [String] = []

        @Option(
            help: """
                Open connections at most; past it new ones are answered 503 (default \
                \(ConnectionLimits.defaultMaximum), lowered to what the open-file limit bears).
                """)
        var maxConnections: Int?

        @Option(
            help: """
                Open connections one client address (an IPv6 /64) may hold; past it new ones are \
                answered 429. Trusted proxies are exempt.
                """)
        var maxConnectionsPerAddress = ConnectionLimits.defaultPerAddress

        @Option(help: "How long a request may take to arrive, from its first byte or the connection's start.")
        var requestReadTimeout = DurationArgument(seconds: 10)

        @Option(help: "How long a connection may wait idle for its next request.")
        var idleTimeout = DurationArgument(seconds: 75)

        @Option(
            help: ArgumentHelp(
                "The longest a long-poll is held (a device's inbox, a requester's wait), e.g. 30s, 2m.",
                discussion: """
                    Devices poll again after each hold: longer holds mean fewer polls, each a proof to check and \
                    spend. Behind a proxy, keep it below the proxy's read timeout. 1s to 15m.
                    """))
        var maxWait = DurationArgument(seconds: ApprovalPolicy().maxWait)

        @OptionGroup(title: "Code delivery") var senders: SenderOptions

        @Option(
            name: .customLong("push-contact"),
            help: ArgumentHelp(
                "Where push services' operators can reach you (VAPID sub): a mailto: or https: URL.",
                discussion: "Default: the broker's first public URL."))
        var pushContact: String?

        @Flag(
            name: .customLong("allow-private-push-endpoints"),
            help: ArgumentHelp(
                "Take push endpoints on loopback, private or link-local addresses, and over plain http.",
                discussion:
                    "For a push service (such as ntfy) on your own network, or tests. Off by default: a push endpoint is a URL a device chose, and the broker would otherwise POST wherever it points inside your network."
            ))
        var allowPrivatePushEndpoints = false

        @Flag(
            name: .customLong("allow-private-webhook-endpoints"),
            help: ArgumentHelp(
                "Send webhooks to endpoints on loopback, private or link-local addresses.",
                discussion:
                    "For an app backend on your own network. Off by default: an app's API key chooses its webhook URL, and the broker would otherwise POST wherever it points inside your network. A broker whose public URL is on loopback (a development setup) allows them anyway."
            ))
        var allowPrivateWebhookEndpoints = false

        @Option(
            name: .customLong("radius-listen"),
            help: ArgumentHelp(
                "Answer RADIUS (UDP) on HOST:PORT, e.g. 0.0.0.0:1812 or [::]:1812; off by default.",
                discussion:
                    "VPN servers, firewalls and Wi-Fi controllers registered with `device-broker radius add` ask there; see docs/radius.md."
            ))
        var radiusListen: String?

        @Option(
            help: ArgumentHelp(
                "Read people from the directory these settings name (LDAP), now and on their schedule.",
                discussion:
                    "A person disabled there, or gone from it, has every device suspended until they are enabled again; see docs/directory.md."
            ))
        var directory: String?

        @Option(
            name: .customLong("radius-hold"),
            help: "How long a RADIUS request waits for the device's decision before it is answered, e.g. 25s (5s-60s).")
        var radiusHold = DurationArgument(seconds: RADIUSListenerConfiguration.defaultHold)

        func validate() throws {
            guard (1...65535).contains(port) else { throw ValidationError("--port must be 1…65535") }
            if let radiusListen, RADIUSAddress(radiusListen) == nil {
                throw ValidationError("--radius-listen \(radiusListen) is not HOST:PORT (e.g. 0.0.0.0:1812, [::]:1812)")
            }
            guard radiusHold.seconds >= 5, radiusHold.seconds <= 60 else {
                throw ValidationError("--radius-hold must be between 5s and 60s")
            }
            guard maxRequestsPerUser >= 1, maxRequestsPerAddress >= 1 else {
                throw ValidationError("--max-requests-per-user and --max-requests-per-address must be at least 1")
            }
            guard maxPending >= 1, maxRequesterPending >= 1, maxPendingPerAddress >= 1 else {
                throw ValidationError(
                    "--max-pending, --max-requester-pending and --max-pending-per-address must be at least 1")
            }
            guard (2...1000).contains(databaseConnections) else {
                throw ValidationError("--database-connections must be 2…1000")
            }
            guard approvalWindow.seconds >= 1, approvalWindow.seconds <= 600 else {
                throw ValidationError("--approval-window must be between 1s and 10m")
            }
            guard maxWait.seconds >= 1, maxWait.seconds <= 900 else {
                throw ValidationError("--max-wait must be between 1s and 15m")
            }
            guard fraudProtection.seconds >= 1, fraudProtection.seconds <= 7 * 86400 else {
                throw ValidationError("--fraud-protection must be between 1s and 7d")
            }
            guard codeLifetime.seconds >= 60, codeLifetime.seconds <= 1800 else {
                throw ValidationError("--code-lifetime must be between 1m and 30m")
            }
            guard (tlsCertificate == nil) == (tlsKey == nil) else {
                throw ValidationError("give --tls-certificate and --tls-key together")
            }
            guard (maxConnections ?? 1) >= 1, maxConnectionsPerAddress >= 1 else {
                throw ValidationError("--max-connections and --max-connections-per-address must be at least 1")
            }
            guard requestReadTimeout.seconds >= 1, idleTimeout.seconds >= 1 else {
                throw ValidationError("--request-read-timeout and --idle-timeout must be at least 1s")
            }
            for proxy in trustedProxies where IPNetwork(proxy) == nil {
                throw ValidationError("--trusted-proxy \(proxy) is not an address or CIDR range")
            }
        }

        func run() async throws {
            switch logFormat {
            case .text: LoggingSystem.bootstrap { TextLogHandler(label: $0) }
            case .json: LoggingSystem.bootstrap { JSONLogHandler(label: $0) }
            }
            let registry = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(BrokerMetrics.factory(for: registry))
            var policy = ApprovalPolicy()
            policy.window = approvalWindow.seconds
            policy.maxWait = maxWait.seconds
            policy.fraudProtection = FraudProtection(duration: fraudProtection.seconds)
            policy.pendingLimits = PendingLimits(
                perUser: maxPending, perUserFromRequesters: maxRequesterPending, perAddress: maxPendingPerAddress,
                requestsPerUser: maxRequestsPerUser, requestsPerAddress: maxRequestsPerAddress)
            var configuration = BrokerConfiguration(
                host: host, port: port, dataDirectory: store.dataDirectory, publicURLs: publicURLs, policy: policy,
                durability: durability, logLevel: logLevel, retention: retention.seconds)
            configuration.databaseURL = try store.configuration(packagedDefault: false).databaseURL
            configuration.databaseConnections = databaseConnections
            (configuration.sender, configuration.phoneSender) = senders.configurations()
            configuration.verification.codeLifetime = codeLifetime.seconds
            configuration.totpKeyFile = totpKeyFile ?? ProcessEnvironment.value("COUNTERSIGN_TOTP_KEY_FILE")
            configuration.metrics = BrokerMetrics(registry: registry)
            if let tlsCertificate, let tlsKey { configuration.tls = (tlsCertificate, tlsKey) }
            configuration.trustedProxies = trustedProxies.compactMap(IPNetwork.init)
            configuration.push = PushConfiguration(
                contact: pushContact, allowPrivateEndpoints: allowPrivatePushEndpoints)
            configuration.allowPrivateWebhookEndpoints = allowPrivateWebhookEndpoints
            if let radiusListen, let address = RADIUSAddress(radiusListen) {
                configuration.radius = RADIUSListenerConfiguration(
                    host: address.host, port: address.port, hold: radiusHold.seconds)
            }
            do {
                configuration.directory = try directory.map(DirectorySettings.file)
            } catch {
                throw ValidationError(error.description)
            }
            // A file missing now would fail every read, quietly but for the log.
            for (setting, path) in configuration.directory?.files ?? []
            where !FileManager.default.isReadableFile(atPath: path) {
                throw ValidationError("\(directory ?? ""): cannot read \(setting) \(path)")
            }
            try await configuration.checkListenAddress()
            var logger = Logger(label: "device-broker")
            logger.logLevel = logLevel
            configuration.connections = connectionLimits(
                databaseConnections: configuration.databaseURL == nil ? 0 : databaseConnections, logger: logger)
            let app = try await buildApplication(configuration)
            try await configuration.run(app, logger: logger)
        }

        /// The limits asked for, with the maximum lowered to what the
        /// process's open-file limit (raised to its hard limit) bears.
        private func connectionLimits(databaseConnections: Int, logger: Logger) -> ConnectionLimits {
            let asked = ConnectionLimits(
                maximum: maxConnections ?? ConnectionLimits.defaultMaximum, perAddress: maxConnectionsPerAddress,
                requestReadTimeout: .milliseconds(Int64(requestReadTimeout.seconds * 1000)),
                idleTimeout: .milliseconds(Int64(idleTimeout.seconds * 1000)))
            let openFiles = OpenFileLimit.raise()
            let limits = asked.fitted(
                toOpenFiles: openFiles,
                reserved: ConnectionLimits.reservedDescriptors(databaseConnections: databaseConnections))
            let summary =
                "serving at most \(limits.maximum) connections, \(limits.perAddress) per address "
                + "(open-file limit \(openFiles))"
            if limits.maximum < asked.maximum, maxConnections != nil {
                logger.warning(
                    "\(summary): the limit does not bear --max-connections \(asked.maximum); raise it (LimitNOFILE=, ulimit -n)"
                )
            } else {
                logger.notice("\(summary)")
            }
            return limits
        }
    }
}

/// How log lines look.
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

extension SQLiteStore.Durability: ExpressibleByArgument {}
extension Logger.Level: @retroactive ExpressibleByArgument {}
