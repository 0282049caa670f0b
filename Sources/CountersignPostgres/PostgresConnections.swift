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
    private let logger: Logger
    private let state = Mutex(State())
    private let tls: PostgresConnection.Configuration.TLS
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
        state.withLock { $0.leases[key]?.waiting = now }
    }

    /// The answer to the query on `key` came (or the query failed).
    func answered(_ key: ObjectIdentifier) {
        state.withLock { $0.leases[key]?.waiting = nil }
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

    // MARK: Making connections

    /// Starts making connections until ``PostgresSettings/size`` are open or
    /// being made. While the database is unreachable, one at a time, after
    /// a pause that grows to a second.
    private func refill() {
        let count = state.withLock { state -> Int in
            guard !state.closed else { return 0 }
            let missing = settings.size - state.open - state.connecting
            guard missing > 0 else { return 0 }
            if state.outage != nil || state.consecutiveFailures > 0 {
                guard state.connecting == 0, ContinuousClock.now >= state.nextAttempt else { return 0 }
                state.connecting += 1
                return 1
            }
            let count = min(missing, settings.concurrentConnects - state.connecting)
            guard count > 0 else { return 0 }
            state.connecting += count
            return count
        }
        for _ in 0..<count { startConnecting() }
    }

    private func startConnecting() {
        Task {
            let task = Task { try await self.connect() }
            let id = watch(task.cancel)
            let outcome = await task.result
            unwatch(id)
            connected(outcome)
        }
    }

    /// Has the watchdog cancel a connection being made past its deadline.
    private func watch(_ cancel: @escaping @Sendable () -> Void) -> Int {
        let deadline = ContinuousClock.now + settings.connectTimeout
        return state.withLock { state in
            state.nextConnect += 1
            state.connects[state.nextConnect] = Connecting(cancel: cancel, deadline: deadline)
            return state.nextConnect
        }
    }

    private func unwatch(_ id: Int) {
        state.withLock { _ = $0.connects.removeValue(forKey: id) }
    }

    private func connected(_ outcome: Result<PostgresConnection, any Error>) {
        let now = ContinuousClock.now
        let (handed, failed, restored, began) = state.withLock {
            state -> ((Waiter, PostgresConnection)?, [Waiter], Bool, String?) in
            state.connecting -= 1
            switch outcome {
            case .success(let connection):
                guard !state.closed else { return (nil, [], false, nil) }
                let restored = state.outage != nil
                if state.madeFirst { state.reconnects += 1 }
                state.madeFirst = true
                state.outage = nil
                state.consecutiveFailures = 0
                state.lastProgress = now
                state.open += 1
                state.alive.insert(ObjectIdentifier(connection))
                guard state.waiters.isEmpty else {
                    let waiter = state.waiters.removeFirst()
                    state.leases[ObjectIdentifier(connection)] = Lease(
                        connection: connection, since: now, hold: waiter.hold)
                    return ((waiter, connection), [], restored, nil)
                }
                state.idle.append(connection)
                return (nil, [], restored, nil)
            case .failure(let error):
                state.failedConnects += 1
                state.consecutiveFailures += 1
                let pause = min(100 << min(state.consecutiveFailures - 1, 4), 1000)
                state.nextAttempt = now + .milliseconds(pause)
                // With connections still open, requests go on through them.
                guard state.open == 0, !state.closed else { return (nil, [], false, nil) }
                let reason = "cannot reach PostgreSQL: \(Self.describe(error))"
                let began = state.outage == nil
                state.outage = Outage(reason: reason, final: (error as? Unavailable)?.final ?? false)
                defer { state.waiters.removeAll() }
                return (nil, state.waiters, false, began ? reason : nil)
            }
        }
        if case .success(let connection) = outcome {
            guard !state.withLock({ $0.closed }) else {
                connection.closeNow()
                return
            }
            connection.closeFuture.whenComplete { _ in self.closed(connection) }
            if restored { logger.notice("PostgreSQL answers again; serving") }
        }
        // Before the first connection the store's user says what it does
        // (a broker waits at start, or gives up on a refusal).
        if let began, state.withLock({ $0.madeFirst }) {
            logger.error("PostgreSQL is unreachable; answering 503 until it is back: \(began)")
        }
        let outage = state.withLock { $0.outage } ?? Outage(reason: "cannot reach PostgreSQL", final: false)
        for waiter in failed {
            waiter.continuation.resume(throwing: Unavailable(description: outage.reason, final: outage.final))
        }
        if let (waiter, connection) = handed { waiter.continuation.resume(returning: connection) }
        refill()
    }

    /// A connection closed (PostgreSQL went away, or the pool closed it).
    private func closed(_ connection: PostgresConnection) {
        state.withLock { state in
            state.retired.remove(ObjectIdentifier(connection))
            guard state.alive.remove(ObjectIdentifier(connection)) != nil else { return }
            state.open -= 1
            state.idle.removeAll { $0 === connection }
        }
        refill()
    }

    /// A new connection to the first server that answers (and, unless the
    /// URL says `target_session_attrs=any`, takes writes).
    private func connect() async throws -> PostgresConnection {
        var failures: [String] = []
        var final = true
        for server in settings.servers {
            do {
                var configuration = PostgresConnection.Configuration(
                    host: server.host, port: server.port, username: settings.username, password: settings.password,
                    database: settings.database, tls: tls)
                configuration.options.connectTimeout = .milliseconds(
                    Int64(settings.connectTimeout / .milliseconds(1)))
                configuration.options.additionalStartupParameters = [("application_name", "countersign-broker")]
                let id = state.withLock { state in
                    state.nextConnectionID += 1
                    return state.nextConnectionID
                }
                let connection = try await PostgresConnection.connect(
                    configuration: configuration, id: id, logger: logger)
                guard settings.requireWritable else { return connection }
                do {
                    if try await takesWrites(connection) { return connection }
                    failures.append("\(server): read-only (a standby, or default_transaction_read_only)")
                } catch {
                    failures.append("\(server): \(Self.describe(error))")
                }
                try? await connection.close()
                final = false
            } catch {
                failures.append("\(server): \(Self.describe(error))")
                final = final && Self.refusedUs(error)
            }
        }
        throw Unavailable(description: failures.joined(separator: "; "), final: final)
    }

    /// Whether the server behind `connection` takes writes, asked under
    /// the watchdog's deadline like any lease.
    private func takesWrites(_ connection: PostgresConnection) async throws -> Bool {
        let key = ObjectIdentifier(connection)
        state.withLock { $0.leases[key] = Lease(connection: connection, since: .now, hold: settings.queryDeadline) }
        defer { state.withLock { _ = $0.leases.removeValue(forKey: key) } }
        let row = try await PostgresSession(connection: connection, pool: self)
            .row("SHOW transaction_read_only", logger: logger)
        return try row?.value("transaction_read_only", as: String.self) == "off"
    }

    /// A refusal of the broker's credentials or database, as opposed to a
    /// server that is away.
    static func refusedUs(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        let state = error.serverInfo?[.sqlState] ?? ""
        return state.hasPrefix("28") || state == "3D000"
            || [.sslUnsupported, .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError].contains(
                error.code)
    }

    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let message = error.serverInfo?[.message] {
            return "\(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
        }
        if let underlying = error.underlying { return "\(error.code): \(underlying)" }
        return "\(error.code)"
    }

    // MARK: The watchdog

    /// Fails waits past their deadline, closes connections whose operation
    /// overran ``PostgresSettings/queryDeadline`` (the query in flight then
    /// fails), and cancels connections being made for too long. When one
    /// connection overran, the idle ones are closed too: they most likely
    /// lead to the same silent server.
    private func inspect(now: ContinuousClock.Instant) {
        let (late, overrun, stalled) = state.withLock {
            state -> ([Waiter], [PostgresConnection], [@Sendable () -> Void]) in
            // A wait ends when it is past its deadline and no connection
            // came back or was made meanwhile: a burst larger than the pool
            // is served in turn, a database that stopped answering is not
            // waited for.
            var late: [Waiter] = []
            let noProgress = now - state.lastProgress > settings.acquireWait
            state.waiters.removeAll { waiter in
                guard waiter.hold != nil, waiter.deadline < now, noProgress || now - waiter.deadline > .seconds(30)
                else { return false }
                late.append(waiter)
                return true
            }
            var overrun: [PostgresConnection] = []
            for (key, lease) in state.leases where !lease.overran {
                guard let hold = lease.hold, let waiting = lease.waiting, now - waiting > hold else { continue }
                state.leases[key]?.overran = true
                state.queryTimeouts += 1
                overrun.append(lease.connection)
            }
            var stalled: [@Sendable () -> Void] = []
            for (id, connecting) in state.connects where connecting.deadline < now {
                stalled.append(connecting.cancel)
                state.connects[id]?.deadline = now + .seconds(3600)
            }
            return (late, overrun, stalled)
        }
        let wait = settings.acquireWait
        for waiter in late {
            waiter.continuation.resume(
                throwing: Unavailable(description: "no PostgreSQL connection came free within \(wait)"))
        }
        for cancel in stalled { cancel() }
        if !overrun.isEmpty {
            logger.error(
                "PostgreSQL did not answer within \(settings.queryDeadline); closing the connection",
                metadata: ["connections": "\(overrun.count)"])
            for connection in overrun { connection.closeNow() }
            retireAll(because: "a query got no answer within \(settings.queryDeadline)")
        }
        refill()
    }
}

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

extension PostgresConnection {
    /// Starts closing the connection, without waiting for it to close:
    /// queries in flight on it fail.
    func closeNow() {
        let closing: EventLoopFuture<Void> = close()
        // Kept until closed: a connection let go of while open fails an assertion.
        closing.whenComplete { _ in withExtendedLifetime(self) {} }
    }
}
