import CountersignStore
import Logging
import NIOCore
import PostgresNIO
import Synchronization

extension PostgresConnections {
    // MARK: Making connections

    /// Starts making connections until ``PostgresSettings/size`` are open or
    /// being made. While the database is unreachable, one at a time, after
    /// a pause that grows to a second.
    func refill() {
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

    func startConnecting() {
        Task {
            let task = Task { try await self.connect() }
            let id = watch(task.cancel)
            let outcome = await task.result
            unwatch(id)
            connected(outcome)
        }
    }

    /// Has the watchdog cancel a connection being made past its deadline.
    func watch(_ cancel: @escaping @Sendable () -> Void) -> Int {
        let deadline = ContinuousClock.now + settings.connectTimeout
        return state.withLock { state in
            state.nextConnect += 1
            state.connects[state.nextConnect] = Connecting(cancel: cancel, deadline: deadline)
            return state.nextConnect
        }
    }

    func unwatch(_ id: Int) {
        state.withLock { _ = $0.connects.removeValue(forKey: id) }
    }

    func connected(_ outcome: Result<PostgresConnection, any Error>) {
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
                state.nextAttempt = now + Self.pause(afterFailures: state.consecutiveFailures)
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
    func closed(_ connection: PostgresConnection) {
        statements.closed(connection)
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
    func connect() async throws -> PostgresConnection {
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
                // On the event loops in turn. postgres-nio's default is the
                // loop this task runs on, when it runs on one (the broker
                // runs every task on NIO's loops): every connection on one
                // loop, which then did 85 % of a busy broker's work
                // (docs/benchmarks.md).
                let connection = try await PostgresConnection.connect(
                    on: PostgresConnection.defaultEventLoopGroup.next(), configuration: configuration, id: id,
                    logger: logger)
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
    func takesWrites(_ connection: PostgresConnection) async throws -> Bool {
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

    /// How long to wait before trying again after `failures` failed
    /// attempts in a row: 100 ms, doubling to a second.
    static func pause(afterFailures failures: Int) -> Duration {
        .milliseconds(min(100 << min(max(failures - 1, 0), 4), 1000))
    }
}
