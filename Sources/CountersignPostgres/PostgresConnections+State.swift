import CountersignStore
import Logging
import NIOCore
import PostgresNIO
import Synchronization

extension PostgresConnections {
    /// An operation's hold on a connection.
    struct Lease {
        let connection: PostgresConnection
        let since: ContinuousClock.Instant
        /// How long a query on it may wait for its answer before the
        /// watchdog closes the connection; nil for migrations and
        /// administration.
        let hold: Duration?
        /// Since when a query has been waiting for its answer.
        var waiting: ContinuousClock.Instant?
        /// Queries sent and not yet answered (several, when a transaction
        /// sends statements without waiting for each).
        var unanswered = 0
        var overran = false
    }

    /// An operation waiting for a connection.
    struct Waiter {
        typealias Continuation = CheckedContinuation<PostgresConnection, any Error>
        let id: Int
        let deadline: ContinuousClock.Instant
        /// The lease's hold; a wait for an unbounded one is unbounded too.
        let hold: Duration?
        let continuation: Continuation
    }

    /// A connection being made.
    struct Connecting {
        let cancel: @Sendable () -> Void
        var deadline: ContinuousClock.Instant
    }

    /// The database could not be reached, and no connection is open.
    struct Outage {
        let reason: String
        let final: Bool
    }

    struct State {
        var idle: [PostgresConnection] = []
        var leases: [ObjectIdentifier: Lease] = [:]
        var waiters: [Waiter] = []
        var nextWaiter = 0
        /// Waits begun but not yet queued or served.
        var registering: Set<Int> = []
        /// Waits cancelled before they were queued.
        var cancelledWaiters: Set<Int> = []
        /// Connections open (idle or leased) that have not been seen to close.
        var alive: Set<ObjectIdentifier> = []
        /// Leased connections to close when they come back.
        var retired: Set<ObjectIdentifier> = []
        var open = 0
        /// Connections of their own (LISTEN) open now.
        var dedicated = 0
        var connecting = 0
        /// Connections being made, the pool's and dedicated ones, by a number of their own.
        var connects: [Int: Connecting] = [:]
        var nextConnect = 0
        var nextConnectionID = 0
        var outage: Outage?
        var consecutiveFailures = 0
        var nextAttempt = ContinuousClock.now
        var madeFirst = false
        /// When an operation last gave a working connection back, or one was made.
        var lastProgress = ContinuousClock.now
        var closed = false
        // Counted for /metrics.
        var reconnects = 0
        var failedConnects = 0
        var queryTimeouts = 0
    }
}
