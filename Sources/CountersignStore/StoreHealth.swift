/// What a store that reaches its database over a network knows of it.
public struct StoreHealth: Sendable, Hashable {
    /// False while the database cannot be reached: operations fail at once.
    public var available: Bool
    /// Connections open now.
    public var openConnections: Int
    /// Connections made to replace ones that closed, since start.
    public var reconnects: Int
    /// Attempts to connect that failed, since start.
    public var failedConnects: Int
    /// Operations whose connection was closed under them for want of an
    /// answer within the deadline, since start.
    public var queryTimeouts: Int

    public init(available: Bool, openConnections: Int, reconnects: Int, failedConnects: Int, queryTimeouts: Int) {
        self.available = available
        self.openConnections = openConnections
        self.reconnects = reconnects
        self.failedConnects = failedConnects
        self.queryTimeouts = queryTimeouts
    }
}

/// A store whose database can be away for a while (PostgreSQL): the broker
/// asks it for readiness and shows its health in metrics.
public protocol StoreHealthReporting: Sendable {
    /// What the store knows now, without asking the database.
    var health: StoreHealth { get }
    /// Whether the database answers within `timeout`; false at once when
    /// it is known to be unreachable.
    func probe(within timeout: Duration) async -> Bool
}
