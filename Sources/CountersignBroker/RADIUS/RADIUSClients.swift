import CountersignCore
import CountersignStore
import Logging
import ServiceLifecycle
import Synchronization

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
