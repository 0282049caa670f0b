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
