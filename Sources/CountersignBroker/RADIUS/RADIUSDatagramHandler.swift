import CountersignCore
import Foundation
import Logging
import NIOCore
import Synchronization

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
