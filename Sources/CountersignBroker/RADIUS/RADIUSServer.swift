import CountersignCore
import CountersignStore
public import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Where `serve --radius-listen` answers RADIUS, and how long it holds a
/// request for a device's decision.
public struct RADIUSListenerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// How long a request waits for the decision before it is answered
    /// (a challenge again, or in push mode a Reject): shorter than the
    /// NAS's timeout times its retries.
    public var hold: TimeInterval

    /// The hold unless `--radius-hold` says otherwise: long enough to read
    /// a number and type it, short of the 30 s most NAS give a server
    /// before they try their next.
    public static let defaultHold: TimeInterval = 25

    public init(host: String, port: Int, hold: TimeInterval = RADIUSListenerConfiguration.defaultHold) {
        self.host = host
        self.port = port
        self.hold = hold
    }
}

/// The RADIUS listener (RFC 2865 over UDP): Access-Requests of registered
/// clients answered by ``RADIUSExchange``, Status-Server (RFC 5997) and
/// Accounting-Request (RFC 2866, acknowledged only) answered at once,
/// anything else dropped without an answer.
struct RADIUSServer: Service {
    let environment: BrokerEnvironment
    let configuration: RADIUSListenerConfiguration
    let logger: Logger

    /// Requests answered at once beyond which new ones are dropped: each
    /// held one is a task and an event.
    static let maximumInFlight = 4096

    typealias Datagrams = NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>

    /// A whole packet of the largest size RFC 2865 allows (NIO reads 2,048
    /// bytes of a datagram unless told otherwise).
    static let receiveBuffers = FixedSizeRecvByteBufferAllocator(capacity: RADIUSPacket.maximumLength)

    /// Requests of one client answered at once: a quarter of all, so that
    /// one NAS (or someone spoofing one relaxed to take requests without a
    /// Message-Authenticator) cannot hold every place.
    static let maximumInFlightPerClient = maximumInFlight / 4

    /// Binds the UDP socket; an address that cannot be listened on fails
    /// the start, as the HTTP listener's does.
    static func bind(_ configuration: RADIUSListenerConfiguration) async throws -> Datagrams {
        try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.recvAllocator, value: RADIUSServer.receiveBuffers)
            .bind(host: configuration.host, port: configuration.port) { channel in
                channel.eventLoop.makeCompletedFuture { try Datagrams(wrappingChannelSynchronously: channel) }
            }
    }

    func run() async throws {
        let channel = try await Self.bind(configuration)
        let clients = RADIUSClients(store: environment.store, logger: logger)
        await clients.refresh()
        let handler = RADIUSDatagramHandler(
            exchange: RADIUSExchange(environment: environment, hold: configuration.hold, logger: logger),
            clients: clients, retransmissions: RADIUSRetransmissions(), metrics: environment.metrics, logger: logger)
        logger.notice("answering RADIUS on \(configuration.host):\(configuration.port) (UDP)")
        try await channel.executeThenClose { inbound, outbound in
            await withDiscardingTaskGroup { group in
                group.addTask { await clients.keepFresh() }
                do {
                    // Ends at shutdown; requests in progress are answered
                    // first (a held one at once, as the event stands).
                    for try await datagram in inbound.cancelOnGracefulShutdown() {
                        guard handler.enter() else {
                            environment.metrics.radius(.dropped)
                            continue
                        }
                        group.addTask {
                            defer { handler.leave() }
                            if let answer = await handler.answer(datagram) { try? await outbound.write(answer) }
                        }
                    }
                } catch {
                    logger.error("the RADIUS socket failed", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}

/// One datagram to its answer: the client found by the source address,
/// the packet decoded and authenticated, a retransmission answered from
/// the cache; nil drops it (RFC 2865 §3: a request from an unknown
/// client or with a wrong secret is silently discarded).
final class RADIUSDatagramHandler: Sendable {
    let exchange: RADIUSExchange
    let clients: RADIUSClients
    let retransmissions: RADIUSRetransmissions
    let metrics: BrokerMetrics
    let logger: Logger
    private let inFlight = Atomic<Int>(0)
    /// Requests in progress by client name.
    private let inFlightByClient = Mutex<[String: Int]>([:])
    /// When a dropped packet was last logged, and how many went unlogged
    /// since: a flood writes a line a second, not a line a packet.
    private let dropLog = Mutex<(last: ContinuousClock.Instant?, unlogged: Int)>((nil, 0))

    init(
        exchange: RADIUSExchange, clients: RADIUSClients, retransmissions: RADIUSRetransmissions,
        metrics: BrokerMetrics, logger: Logger
    ) {
        self.exchange = exchange
        self.clients = clients
        self.retransmissions = retransmissions
        self.metrics = metrics
        self.logger = logger
    }

    func enter() -> Bool {
        let (entered, _) = inFlight.add(1, ordering: .relaxed)
        guard entered <= RADIUSServer.maximumInFlight else {
            inFlight.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func leave() { inFlight.subtract(1, ordering: .relaxed) }

    func answer(_ datagram: AddressedEnvelope<ByteBuffer>) async -> AddressedEnvelope<ByteBuffer>? {
        guard let bytes = await answer(Array(buffer: datagram.data), from: datagram.remoteAddress) else { return nil }
        return AddressedEnvelope(remoteAddress: datagram.remoteAddress, data: ByteBuffer(bytes: bytes))
    }

    func answer(_ bytes: [UInt8], from remote: SocketAddress) async -> [UInt8]? {
        guard let source = remote.ipAddress, let client = clients.client(for: source) else {
            clients.refreshSoon()
            return drop("from an address no RADIUS client covers", source: remote.ipAddress ?? "?")
        }
        let request: RADIUSPacket
        do {
            request = try RADIUSPacket(decoding: bytes)
        } catch {
            return drop("malformed: \(error)", source: source, client: client)
        }
        guard [.accessRequest, .statusServer, .accountingRequest].contains(request.code) else {
            return drop("not an Access-Request (code \(request.code.rawValue))", source: source, client: client)
        }
        let secret = RADIUSSecret(client.secret)
        do {
            if request.code == .accountingRequest {
                // Its authenticator signs the whole packet (RFC 2866 §3).
                try secret.verifyAccountingRequest(request)
            } else {
                // Status-Server must carry a Message-Authenticator (RFC 5997 §3).
                try secret.verifyRequest(
                    request, required: client.requireMessageAuthenticator || request.code == .statusServer)
            }
        } catch {
            clients.refreshSoon()
            return drop(
                error == .missingMessageAuthenticator
                    ? "no Message-Authenticator, which this client must send"
                    : "not authentic: a wrong shared secret or a forged packet", source: source, client: client)
        }
        let key = RADIUSRetransmissions.Key(
            source: source, port: remote.port ?? 0, code: request.code.rawValue, identifier: request.identifier,
            authenticator: request.authenticator)
        switch retransmissions.begin(key) {
        case .answered(let answer):
            metrics.radius(.retransmitted)
            return answer
        case .inProgress:
            metrics.radius(.retransmitted)
            return nil
        case .new: break
        }
        guard enter(client) else {
            retransmissions.forget(key)
            return drop(
                "\(RADIUSServer.maximumInFlightPerClient) of its requests are in progress", source: source,
                client: client)
        }
        defer { leave(client) }
        if request.code == .statusServer {
            return finish(key, secret.answer(.accessAccept, to: request, attributes: []), outcome: .accept)
        }
        if request.code == .accountingRequest {
            // Acknowledged, so that a NAS that waits for it (the OpenVPN
            // plugin does) goes on; the broker keeps no accounting.
            return finish(
                key, secret.answer(.accountingResponse, to: request, attributes: []), outcome: .accounting)
        }
        let password: [UInt8]?
        do {
            password = try secret.password(of: request)
        } catch {
            retransmissions.forget(key)
            return drop("a malformed User-Password", source: source, client: client)
        }
        guard var answer = await exchange.answer(request, password: password, from: client, source: source) else {
            retransmissions.forget(key)
            metrics.radius(.dropped)
            return nil
        }
        answer.attributes = RADIUSAmplification.fitted(answer.attributes, answering: request, of: bytes.count)
        let outcome: RADIUSOutcome =
            switch answer.code {
            case .accessAccept: .accept
            case .accessChallenge: .challenge
            default: .reject
            }
        // The user name is what the person at the prompt typed: escaped.
        logger.info(
            "RADIUS request answered",
            metadata: [
                "client": "\(client.name)", "user": "\(DisplayText.escaped(request.text(.userName) ?? ""))",
                "answer": "\(outcome)",
            ])
        return finish(key, secret.answer(answer.code, to: request, attributes: answer.attributes), outcome: outcome)
    }

    private func enter(_ client: RADIUSClient) -> Bool {
        inFlightByClient.withLock { counts in
            guard counts[client.name, default: 0] < RADIUSServer.maximumInFlightPerClient else { return false }
            counts[client.name, default: 0] += 1
            return true
        }
    }

    private func leave(_ client: RADIUSClient) {
        inFlightByClient.withLock { counts in
            counts[client.name, default: 1] -= 1
            if counts[client.name] == 0 { counts[client.name] = nil }
        }
    }

    private func finish(_ key: RADIUSRetransmissions.Key, _ answer: [UInt8], outcome: RADIUSOutcome) -> [UInt8] {
        retransmissions.finish(key, answer: answer)
        metrics.radius(outcome)
        return answer
    }

    private func drop(
        _ why: String, source: String, client: RADIUSClient? = nil, now: ContinuousClock.Instant = .now
    ) -> [UInt8]? {
        metrics.radius(.dropped)
        let unlogged: Int? = dropLog.withLock { log in
            if let last = log.last, now - last < .seconds(1) {
                log.unlogged += 1
                return nil
            }
            defer { log = (now, 0) }
            return log.unlogged
        }
        guard let unlogged else { return nil }
        var metadata: Logger.Metadata = ["source": "\(source)"]
        if let client { metadata["client"] = "\(client.name)" }
        if unlogged > 0 { metadata["unlogged_drops"] = "\(unlogged)" }
        logger.notice("RADIUS request dropped: \(why)", metadata: metadata)
        return nil
    }
}

/// The registered clients, as last read from the store: re-read every
/// 10 s, so that a client removed or given a new secret through any
/// instance (or `device-broker radius`) is known everywhere soon; and at
/// most once a second when a request comes from an address no client
/// covers or fails its secret, so that a client just added or rotated is
/// answered from its first retransmission.
final class RADIUSClients: Sendable {
    let store: any CountersignStore
    let logger: Logger
    private let known = Mutex<[(network: IPNetwork, client: RADIUSClient)]>([])
    private let lastAsked = Mutex<ContinuousClock.Instant?>(nil)

    static let refreshInterval: Duration = .seconds(10)
    static let soonestRefresh: Duration = .seconds(1)

    init(store: any CountersignStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// The client whose range holds `address`: the narrowest if several do.
    func client(for address: String) -> RADIUSClient? {
        known.withLock { known in
            known.filter { $0.network.contains(address) }.max { $0.network.prefix < $1.network.prefix }?.client
        }
    }

    func refresh() async {
        do {
            let clients = try await store.radiusClients().compactMap { client in
                IPNetwork(client.network).map { (network: $0, client: client) }
            }
            known.withLock { $0 = clients }
        } catch {
            // Keep answering the clients last read while the store is away.
            logger.warning("could not re-read the RADIUS clients", metadata: ["error": "\(error)"])
        }
    }

    /// Re-reads the clients in the background, unless it was asked less
    /// than ``soonestRefresh`` ago: a flood of unknown packets costs one
    /// read a second.
    func refreshSoon(now: ContinuousClock.Instant = .now) {
        let due = lastAsked.withLock { last in
            guard last.map({ now - $0 >= Self.soonestRefresh }) ?? true else { return false }
            last = now
            return true
        }
        if due { Task { await self.refresh() } }
    }

    func keepFresh() async {
        try? await cancelWhenGracefulShutdown {
            while true {
                try await Task.sleep(for: Self.refreshInterval)
                await self.refresh()
            }
        }
    }
}

/// The answers of the last 30 s by client address, port, Identifier and
/// Request Authenticator (RFC 5080 §2.2.2): a NAS that retransmits a
/// request gets the same answer again, and one still being answered (held
/// for a decision) opens nothing new.
final class RADIUSRetransmissions: Sendable {
    struct Key: Hashable, Sendable {
        let source: String
        let port: Int
        let code: UInt8
        let identifier: UInt8
        let authenticator: [UInt8]
    }

    enum Entry: Sendable {
        case inProgress
        case answered([UInt8], at: ContinuousClock.Instant)
    }

    enum Begun: Sendable, Equatable {
        case new, inProgress
        case answered([UInt8])
    }

    static let kept: Duration = .seconds(30)
    /// Requests remembered at most; beyond, the oldest answers go first.
    static let capacity = 65536

    private let entries = Mutex<(entries: [Key: Entry], pruned: ContinuousClock.Instant?)>(([:], nil))

    func begin(_ key: Key, now: ContinuousClock.Instant = .now) -> Begun {
        entries.withLock { state in
            switch state.entries[key] {
            case .inProgress: return .inProgress
            case .answered(let answer, let at) where now - at < Self.kept: return .answered(answer)
            default:
                // Stale answers go every few seconds, and at once when full,
                // so that memory follows the last 30 s of requests.
                let full = state.entries.count >= Self.capacity
                if full || state.pruned.map({ now - $0 >= .seconds(5) }) ?? true {
                    Self.prune(&state.entries, now: now, full: full)
                    state.pruned = now
                }
                state.entries[key] = .inProgress
                return .new
            }
        }
    }

    func finish(_ key: Key, answer: [UInt8], now: ContinuousClock.Instant = .now) {
        entries.withLock { $0.entries[key] = .answered(answer, at: now) }
    }

    /// Forgets a request that got no answer: its retransmission is tried afresh.
    func forget(_ key: Key) {
        _ = entries.withLock { $0.entries.removeValue(forKey: key) }
    }

    /// How many requests it remembers.
    var count: Int { entries.withLock { $0.entries.count } }

    /// Drops the answers older than ``kept``; when `full` and none were,
    /// the oldest half.
    private static func prune(_ entries: inout [Key: Entry], now: ContinuousClock.Instant, full: Bool) {
        let answered = entries.compactMap { key, entry -> (Key, ContinuousClock.Instant)? in
            if case .answered(_, let at) = entry { return (key, at) }
            return nil
        }
        let stale = answered.filter { now - $0.1 >= kept }
        let dropped =
            stale.isEmpty && full ? Array(answered.sorted { $0.1 < $1.1 }.prefix(answered.count / 2 + 1)) : stale
        for (key, _) in dropped { entries.removeValue(forKey: key) }
    }
}

/// A RADIUS answer is never more than four times its request's size, so
/// that a forged source address cannot make the broker a large reflector;
/// the Reply-Message, the only text, is shortened to fit.
enum RADIUSAmplification {
    static let factor = 4

    static func fitted(_ attributes: [RADIUSAttribute], answering request: RADIUSPacket, of length: Int)
        -> [RADIUSAttribute]
    {
        let proxyStates = request.attributes.filter { $0.type == RADIUSAttribute.Kind.proxyState.rawValue }
        let fixed = RADIUSPacket.headerLength + 18 + proxyStates.reduce(0) { $0 + 2 + $1.value.count }
        var used = fixed + attributes.reduce(0) { $0 + 2 + $1.value.count }
        let budget = factor * length
        guard used > budget else { return attributes }
        var fitted = attributes
        for (index, attribute) in fitted.enumerated() where attribute.type == RADIUSAttribute.Kind.replyMessage.rawValue
        {
            let over = used - budget
            let keep = max(0, attribute.value.count - over)
            // At a character's start, never inside one.
            var end = keep
            while end > 0, end < attribute.value.count, attribute.value[end] & 0xC0 == 0x80 { end -= 1 }
            fitted[index].value = Array(attribute.value.prefix(end))
            used -= attribute.value.count - end
        }
        return fitted.filter { $0.type != RADIUSAttribute.Kind.replyMessage.rawValue || !$0.value.isEmpty }
    }
}
