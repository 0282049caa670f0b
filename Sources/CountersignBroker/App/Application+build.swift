import CountersignCore
import CountersignPostgres
import CountersignSQLite
import CountersignSenders
import CountersignStore
import Foundation
public import Hummingbird
import HummingbirdTLS
import Logging
import NIOSSL
import ServiceLifecycle

/// Builds the broker's HTTP application on the configured store.
public func buildApplication(_ configuration: BrokerConfiguration) async throws -> some ApplicationProtocol {
    var logger = Logger(label: "device-broker")
    logger.logLevel = configuration.logLevel
    let watch = StartupWatch(logger: logger, first: "opening the store")
    do {
        return try await buildApplication(configuration, logger: logger, watch: watch)
    } catch {
        watch.done()
        throw error
    }
}

private func buildApplication(_ configuration: BrokerConfiguration, logger: Logger, watch: StartupWatch)
    async throws -> some ApplicationProtocol
{
    let opened = try await configuration.openStore(logger: logger)
    let store = opened.store
    let (issuer, origins) = try configuration.origins()
    // Each public URL that is plain http on another machine, in the order
    // given (the issuer first), once.
    var plain: [Origin] = []
    for url in configuration.publicURLs.isEmpty ? [issuer] : configuration.publicURLs {
        if let origin = Origin(url: url), !origin.isPotentiallyTrustworthy, !plain.contains(origin) {
            plain.append(origin)
        }
    }
    for origin in plain {
        logger.warning(
            """
            the public URL \(origin) is plain http on another machine than this one: browsers give passkeys, \
            notifications and the web approver's offline page to https pages only. Put the broker behind a \
            reverse proxy with a certificate (docs/operations.md, "TLS and proxies")
            """)
    }
    if let origin = Origin(url: issuer), RelyingParty(issuer: origin, origins: origins) == nil {
        logger.notice("no passkeys: none of the public URLs names a domain, and WebAuthn takes no address")
    }
    let vault = try configuration.totpKeyFile.map(TOTPVault.load(file:))
    if vault == nil {
        logger.notice("no --totp-key-file: devices get no TOTP secrets and codes are refused")
    }
    watch.enter("reading the Web Push key")
    let push = try await configuration.push.settings(store: store, issuer: issuer, logger: logger)
    watch.enter("reading the signing keys")
    let keys = try await BrokerKeys.load(from: store, now: Date(), logger: logger)
    let environment = BrokerEnvironment(
        store: store, policy: configuration.policy, issuer: issuer, origins: origins, keys: keys,
        verification: configuration.verification, sender: try configuration.makeSender(logger: logger), vault: vault,
        metrics: configuration.metrics, trustedProxies: configuration.trustedProxies, push: push)
    let counter = ConnectionCounter(
        limits: configuration.connections, trustedProxies: configuration.trustedProxies, logger: logger)
    var app = Application(
        router: buildRouter(environment),
        server: try configuration.tls.map { try .tls(.brokerHTTP1(counter), tlsConfiguration: try serverTLS($0)) }
            ?? .brokerHTTP1(counter),
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port), serverName: "countersign"),
        onServerRunning: { _ in watch.done() }, logger: logger)
    // Services stop in reverse order: the server first, the store last.
    app.addServices(StoreCloser(close: opened.close, hub: environment.hub, logger: logger))
    if let feed = store as? any WakeFeed {
        app.addServices(WakeRelay(feed: feed, hub: environment.hub, logger: logger))
    }
    app.addServices(GarbageCollector(environment: environment, retention: configuration.retention, logger: logger))
    app.addServices(KeyRefresher(environment: environment, logger: logger))
    // A broker whose own URL is on loopback is a developer's: its app's
    // receiver runs on the same machine.
    let developing = URLComponents(string: issuer)?.host.map(WebhookEndpoint.isLoopback) ?? false
    let allowPrivate = configuration.allowPrivateWebhookEndpoints || developing
    let webhooks = StandardWebhookSender(
        endpointGuard: EndpointGuard(
            allowPrivateAddresses: allowPrivate, what: "webhook endpoint", flag: "--allow-private-webhook-endpoints"))
    let cibaPings = CIBANotificationSender(
        endpointGuard: EndpointGuard(
            allowPrivateAddresses: allowPrivate, what: "CIBA notification endpoint",
            flag: "--allow-private-webhook-endpoints"))
    app.addServices(
        OutboxWorker(environment: environment, push: push, webhooks: webhooks, cibaPings: cibaPings, logger: logger))
    if let radius = configuration.radius {
        app.addServices(RADIUSServer(environment: environment, configuration: radius, logger: logger))
    }
    if let directory = configuration.directory {
        app.addServices(
            DirectorySyncService(
                sync: DirectorySyncRun(settings: directory, store: store, now: environment.now),
                metrics: environment.metrics, logger: logger))
    }
    watch.enter("starting its services and listening on \(configuration.host):\(configuration.port)")
    return app
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
    let push = PushController(environment: environment)
    open.get("api/v1/push/vapid-key", use: push.vapidKey)
    open.addRoutes(VerificationPageController(environment: environment).endpoints)
    open.addRoutes(SignInPageController(environment: environment).endpoints)
    open.addRoutes(OpenIDSessionController(environment: environment).endpoints)
    ApproverController().register(on: open)
    ConsoleController(environment: environment).register(on: open)
    let oauth = OAuthController(environment: environment)
    open.addRoutes(oauth.endpoints)
    // OAuth's clients, answered in OAuth's form.
    var clientAuthenticating = lifecycle
    clientAuthenticating.authenticator = CallerAuthenticator(environment: environment, accepts: .oauthClient)
    clientAuthenticating.errorForm = .oauth
    let clients = router.group().add(middleware: clientAuthenticating).group(context: OAuthClientContext.self)
    clients.addRoutes(oauth.clientEndpoints)
    clients.addRoutes(CIBAController(environment: environment).endpoints)
    // An app's key id, without a device: enrolling, redeeming a verification.
    var appAuthenticating = lifecycle
    appAuthenticating.authenticator = CallerAuthenticator(environment: environment, accepts: .apiKey)
    let app = router.group().add(middleware: appAuthenticating).group(context: AppRequestContext.self)
    app.group("api/v0").addRoutes(IdentityController(environment: environment).endpoints)
    app.group("api/v1").addRoutes(EnrollmentController(environment: environment).deviceEndpoints)
    var authenticating = lifecycle
    authenticating.authenticator = CallerAuthenticator(environment: environment)
    let authenticated = router.group("api/v1").add(middleware: authenticating)
    let events = EventController(environment: environment)
    authenticated.group(context: EventCreatorContext.self).addRoutes(events.creatorEndpoints)
    let held = authenticated.group(context: EventHolderContext.self)
    held.addRoutes(events.holderEndpoints)
    let codes = CodeController(environment: environment)
    held.addRoutes(codes.eventEndpoints)
    let backend = authenticated.group(context: BackendRequestContext.self)
    backend.addRoutes(EnrollmentController(environment: environment).backendEndpoints)
    backend.addRoutes(BackendController(environment: environment).endpoints)
    backend.addRoutes(APIKeyController(environment: environment).endpoints)
    backend.addRoutes(WebhookController(environment: environment).endpoints)
    backend.addRoutes(ApproverGroupController(environment: environment).endpoints)
    backend.addRoutes(QuorumPolicyController(environment: environment).endpoints)
    backend.addRoutes(codes.backendEndpoints)
    let reader = authenticated.group(context: DeviceReaderContext.self)
    reader.addRoutes(InboxController(environment: environment).endpoints)
    reader.addRoutes(DeviceController(environment: environment).readEndpoints)
    let device = authenticated.group(context: DeviceRequestContext.self)
    device.addRoutes(DeviceController(environment: environment).endpoints)
    device.addRoutes(push.deviceEndpoints)
    device.addRoutes(PasskeyController(environment: environment).deviceEndpoints)
    device.addRoutes(codes.deviceEndpoints)
    // A decision authenticates itself: the device its key id names.
    var deciding = lifecycle
    deciding.authenticator = CallerAuthenticator(environment: environment, accepts: .decision)
    router.group("api/v1").add(middleware: deciding).group(context: DecisionContext.self)
        .addRoutes(DecisionController(environment: environment).endpoints)
    // The console, by its session cookie.
    var consoleAuthenticating = lifecycle
    consoleAuthenticating.authenticator = CallerAuthenticator(environment: environment, accepts: .console)
    let console = router.group("console/api").add(middleware: consoleAuthenticating)
        .group(context: ConsoleRequestContext.self)
    console.addRoutes(ConsoleReads(environment: environment).endpoints)
    console.addRoutes(ConsoleWatchReads(environment: environment).endpoints)
    console.addRoutes(ConsoleSearchReads(environment: environment).endpoints)
    console.addRoutes(ConsoleDashboard(environment: environment).endpoints)
    console.addRoutes(ConsoleActions(environment: environment).endpoints)
    console.addRoutes(ConsoleAppActions(environment: environment).endpoints)
    console.addRoutes(ConsoleInvitations(environment: environment).endpoints)
    console.addRoutes(ConsoleApproverGroups(environment: environment).endpoints)
    var unmatched = lifecycle
    unmatched.routeMethods = RouteMethods(router.routes)
    router.add(middleware: unmatched)
    return router
}
