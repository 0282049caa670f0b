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
    /// * a prepared statement whose result changed shape under it (a
    ///   migration added a column to a table it reads) is refused before it
    ///   runs, its transaction rolled back: every connection is replaced,
    ///   since any may have prepared it, and `body` runs again;
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
            case .planChanged:
                connections.retireAll(because: "a table changed under the statements prepared on them")
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
        /// A prepared statement's result changed shape (a migration added a
        /// column to a table it reads): PostgreSQL refused it before it
        /// ran, and the transaction it was in is rolled back. Every
        /// connection may hold such statements: run it again on a new one.
        case planChanged
    }

    static func fate(of error: any Error) -> Fate {
        switch error {
        case is PostgresConnections.Closed:
            return .neverSent
        case let error as PSQLError:
            if error.code == .clientClosedConnection { return .neverSent }
            if error.code == .serverClosedConnection || error.code == .connectionError || error.code == .uncleanShutdown
            {
                return .sessionEnded
            }
            return fate(ofRefusal: PostgresStore.refusal(error))
        case let error as PostgresError:
            // A prepared statement's failure, in postgres-nio's older form:
            // a refusal, or the connection closing under it.
            guard let refusal = PostgresStore.refusal(error) else { return .sessionEnded }
            return fate(ofRefusal: refusal)
        default:
            return .statementFailed
        }
    }

    /// The fate of a statement PostgreSQL refused.
    private static func fate(ofRefusal refusal: PostgresStore.Refusal?) -> Fate {
        guard let refusal else { return .statementFailed }
        if refusal.state == "25006" { return .readOnly }
        if refusal.state.hasPrefix("57P") || refusal.state.hasPrefix("08") { return .sessionEnded }
        // "cached plan must not change result type"
        if refusal.state == "0A000" && refusal.routine == "RevalidateCachedQuery" { return .planChanged }
        return .statementFailed
    }
}
