import CountersignStore
import PostgresNIO

extension PostgresStore {
    /// Runs `body` on a leased connection, again on another one when the
    /// failure says nothing of `body` took effect.
    ///
    /// When PostgreSQL drops connections (a restart, a failover, an
    /// administrator), or turns read-only under them:
    ///
    /// * a query on a connection that had closed is never sent
    ///   (``PostgresConnections/Closed``), and one on a connection that is
    ///   closing fails with `clientClosedConnection` before it is sent:
    ///   nothing of `body` took effect (a transaction it began is rolled
    ///   back with the session), so it runs again;
    /// * a server that refuses writes (SQLSTATE 25006: a standby, or a
    ///   primary turned read-only before a failover) took none: every
    ///   connection is replaced, and `body` runs again on a
    ///   new connection, to a server that takes writes;
    /// * a query sent as the connection's end arrives fails with the
    ///   server's reason (57P01 for a terminated session) or
    ///   `serverClosedConnection`. Reads (`idempotent`) run again; a write
    ///   may or may not have taken effect, and its error is reported;
    /// * a query that got no answer within the query deadline had its
    ///   connection closed by the pool's watchdog; it is reported, not run
    ///   again (it may have taken effect).
    ///
    /// It runs again for as long as an operation may wait for a connection
    /// (``PostgresSettings/acquireWait``).
    func withConnection<T: Sendable>(
        idempotent: Bool = false, hold: PostgresStore.Hold = .query, _ body: (PostgresSession) async throws -> T
    ) async throws -> T {
        let giveUp = ContinuousClock.now + connections.settings.acquireWait
        var attempt = 0
        while true {
            attempt += 1
            let connection = try await connections.lease(holding: hold.limit(connections.settings))
            let failure: any Error
            do {
                let result = try await body(PostgresSession(connection: connection, pool: connections))
                connections.release(connection)
                return result
            } catch {
                failure = error
            }
            let fate = Self.fate(of: failure)
            if connections.release(connection, reusable: fate == .statementFailed) {
                throw PostgresConnections.Unavailable(
                    description: "PostgreSQL did not answer within \(hold.limit(connections.settings) ?? .zero)")
            }
            switch fate {
            case .statementFailed:
                throw failure
            case .readOnly:
                connections.retireAll(because: "the server refuses writes (SQLSTATE 25006)")
            case .sessionEnded where !idempotent:
                throw failure
            case .neverSent, .sessionEnded:
                break
            }
            guard ContinuousClock.now < giveUp, attempt < 64 else { throw failure }
            // Time for the pool to see the connection close, before it hands it out again.
            try await Task.sleep(for: .milliseconds(min(attempt, 20)))
        }
    }

    /// How long an operation may hold its connection before it is closed under it.
    enum Hold: Sendable {
        /// A request's query or transaction: ``PostgresSettings/queryDeadline``.
        case query
        /// Housekeeping that may touch many rows (garbage collection): a minute.
        case maintenance
        /// Migrations and administration: no limit.
        case unbounded

        func limit(_ settings: PostgresSettings) -> Duration? {
            switch self {
            case .query: settings.queryDeadline
            case .maintenance: .seconds(60)
            case .unbounded: nil
            }
        }
    }

    /// What a failure says of the connection and of what was sent on it.
    enum Fate {
        /// The statement failed; the connection is fine (a constraint, a
        /// serialization failure, a bug).
        case statementFailed
        /// Nothing was sent, or nothing took effect: run it again.
        case neverSent
        /// The server refuses writes: nothing took effect, and other
        /// connections to it will refuse them too.
        case readOnly
        /// The session ended under the query: it may have taken effect.
        case sessionEnded
    }

    static func fate(of error: any Error) -> Fate {
        switch error {
        case is PostgresConnections.Closed:
            return .neverSent
        case let error as PSQLError:
            let state = error.serverInfo?[.sqlState] ?? ""
            if error.code == .clientClosedConnection { return .neverSent }
            if state == "25006" { return .readOnly }
            if error.code == .serverClosedConnection || error.code == .connectionError || error.code == .uncleanShutdown
                || state.hasPrefix("57P") || state.hasPrefix("08")
            {
                return .sessionEnded
            }
            return .statementFailed
        default:
            return .statementFailed
        }
    }
}
