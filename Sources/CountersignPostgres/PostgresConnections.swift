import CountersignStore
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// The store's PostgreSQL connections: a fixed number kept open, lent to
/// one operation at a time, replaced when they close, and a clear failure
/// within a bound, never a wait without end, while the database is away.
///
/// Written here instead of using postgres-nio's `PostgresClient` (1.33),
/// for what its pool did on an ordinary bad day:
///
/// * With `minimumConnections` equal to `maximumConnections` (so that it
///   arms no idle and keep-alive timers after every query, which cost a
///   tenth of the broker's CPU under load), a lease made while connections
///   were being made again after PostgreSQL restarted failed the
///   precondition `minimumConcurrentConnections <= stats.active`
///   (`PoolStateMachine+ConnectionGroup.swift:163`) and killed the process:
///   every restart of the database took every broker down. With a minimum
///   of 0, a request is left waiting when the last connection fails
///   (postgres-nio issue 657).
/// * While it cannot connect it queues requests until its circuit breaker
///   trips, about a minute later: requests hung instead of answering 503.
/// * It knows one host, and keeps using a server that turned read-only.
///
/// Here a lease costs a lock, and no timer: a ``Watchdog`` looks over the
/// leases, the waiting requests and the connections being made four times
/// a second, and ends what overran its deadline.
final class PostgresConnections: Sendable {
    let settings: PostgresSettings
    let logger: Logger
    let state = Mutex(State())
    let statements = PreparedStatements()
    let tls: PostgresConnection.Configuration.TLS
    private let watchdog = Mutex<Task<Void, Never>?>(nil)

    /// What failing to get or use a connection is reported as.
    struct Unavailable: Error, CustomStringConvertible {
        var description: String
        /// The server refused the broker itself (its password, its
        /// certificate, a database that does not exist): waiting will not help.
        var final = false
    }

    /// A query that was never sent: its connection had closed.
    struct Closed: Error {}

    init(settings: PostgresSettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        self.tls = try settings.tls.connectionTLS()
        let task = Task.detached { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                guard let self else { return }
                self.inspect(now: .now)
            }
        }
        watchdog.withLock { $0 = task }
        refill()
    }

    // MARK: Leases

    /// A connection for one operation, which the watchdog closes under it
    /// once it has held it for `hold` (nil: never); give it back with
    /// ``release(_:reusable:)``.
    /// Throws ``Unavailable`` at once while the database is known to be
    /// unreachable, or after ``PostgresSettings/acquireWait`` when no
    /// connection comes free.
    func lease(holding hold: Duration?) async throws -> PostgresConnection {
        let id = state.withLock { state in
            state.nextWaiter += 1
            state.registering.insert(state.nextWaiter)
            return state.nextWaiter
        }
        let deadline = ContinuousClock.now + settings.acquireWait
        let connection = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Waiter.Continuation) in
                let outcome: Result<PostgresConnection, any Error>? = state.withLock { state in
                    state.registering.remove(id)
                    if state.cancelledWaiters.remove(id) != nil { return .failure(CancellationError()) }
                    if state.closed { return .failure(Unavailable(description: "the store is closed")) }
                    while let connection = state.idle.popLast() {
                        guard !connection.isClosed else { continue }
                        state.leases[ObjectIdentifier(connection)] = Lease(
                            connection: connection, since: .now, hold: hold)
                        return .success(connection)
                    }
                    if let outage = state.outage {
                        return .failure(Unavailable(description: outage.reason, final: outage.final))
                    }
                    state.waiters.append(
                        Waiter(id: id, deadline: deadline, hold: hold, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                    if state.registering.contains(id) { state.cancelledWaiters.insert(id) }
                    return nil as Waiter?
                }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
        return connection
    }

    /// Takes back a leased connection: for the next operation if it is
    /// `reusable` and open, else it is closed. Returns whether the lease
    /// had overrun its deadline (and the watchdog closed the connection).
    @discardableResult
    func release(_ connection: PostgresConnection, reusable: Bool = true) -> Bool {
        enum Next {
            case hand(Waiter)
            case keep
            case close
        }
        let key = ObjectIdentifier(connection)
        let (overran, next) = state.withLock { state -> (Bool, Next) in
            let lease = state.leases.removeValue(forKey: key)
            let overran = lease?.overran ?? false
            guard reusable, !overran, !state.closed, !connection.isClosed, !state.retired.contains(key) else {
                return (overran, .close)
            }
            state.lastProgress = .now
            guard state.waiters.isEmpty else {
                let waiter = state.waiters.removeFirst()
                state.leases[key] = Lease(connection: connection, since: .now, hold: waiter.hold)
                return (false, .hand(waiter))
            }
            state.idle.append(connection)
            return (false, .keep)
        }
        switch next {
        case .hand(let waiter): waiter.continuation.resume(returning: connection)
        case .keep: break
        case .close: connection.closeNow()
        }
        return overran
    }

    /// A query goes out on the leased connection `key`.
    func sending(_ key: ObjectIdentifier) {
        let now = ContinuousClock.now
        state.withLock { state in
            guard var lease = state.leases[key] else { return }
            if lease.unanswered == 0 { lease.waiting = now }
            lease.unanswered += 1
            state.leases[key] = lease
        }
    }

    /// The answer to the query on `key` came (or the query failed).
    func answered(_ key: ObjectIdentifier) {
        state.withLock { state in
            guard var lease = state.leases[key] else { return }
            lease.unanswered = max(0, lease.unanswered - 1)
            // The next query's wait, timed from this answer on.
            lease.waiting = lease.unanswered == 0 ? nil : .now
            state.leases[key] = lease
        }
    }

    /// Retires every open connection: the idle ones are closed now, the
    /// leased ones when they come back. They most likely share the fate of
    /// one that just failed (a server gone silent, or turned read-only);
    /// new ones are made in their place, to a server that answers and
    /// takes writes.
    func retireAll(because reason: String) {
        let idle = state.withLock { state in
            state.retired.formUnion(state.alive)
            defer { state.idle.removeAll() }
            return state.idle
        }
        logger.warning(
            "replacing the PostgreSQL connections", metadata: ["idle": "\(idle.count)", "reason": "\(reason)"])
        for connection in idle { connection.closeNow() }
    }

    /// A connection of its own for the caller (LISTEN), made as the pool's
    /// are: to the first server that answers and takes writes.
    func openDedicated() async throws -> PostgresConnection {
        let task = Task { try await self.connect() }
        let id = watch(task.cancel)
        defer { unwatch(id) }
        let connection = try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
        state.withLock { $0.dedicated += 1 }
        connection.closeFuture.whenComplete { _ in self.state.withLock { $0.dedicated -= 1 } }
        return connection
    }

    // MARK: Health

    /// What the pool knows now, without asking the database.
    var health: StoreHealth {
        state.withLock { state in
            StoreHealth(
                available: state.outage == nil, openConnections: state.open + state.dedicated,
                reconnects: state.reconnects,
                failedConnects: state.failedConnects, queryTimeouts: state.queryTimeouts)
        }
    }

    /// Closes every connection; leases and waits fail from now on.
    func close() async {
        let (waiters, idle, connecting) = state.withLock { state in
            state.closed = true
            defer {
                state.waiters.removeAll()
                state.idle.removeAll()
            }
            return (state.waiters, state.idle, state.connects.values.map(\.cancel))
        }
        watchdog.withLock { $0?.cancel() }
        for cancel in connecting { cancel() }
        for waiter in waiters { waiter.continuation.resume(throwing: Unavailable(description: "the store is closed")) }
        for connection in idle { try? await connection.close() }
        // Connections being made close themselves when they arrive.
        for _ in 0..<200 where state.withLock({ $0.connecting > 0 }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

extension PostgresConnection {
    /// Starts closing the connection, without waiting for it to close:
    /// queries in flight on it fail.
    func closeNow() {
        let closing: EventLoopFuture<Void> = close()
        // Kept until closed: a connection let go of while open fails an assertion.
        closing.whenComplete { _ in withExtendedLifetime(self) {} }
    }
}
