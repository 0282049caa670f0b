import CountersignStore
import PostgresNIO

extension PostgresStore {
    /// Runs `body` on a pooled connection that is still open, again on
    /// another connection when the one it got turns out to be closing.
    ///
    /// When PostgreSQL drops connections (a restart, a failover, an
    /// administrator), the pool hands them out until it sees them close:
    ///
    /// * on one whose channel has already closed, postgres-nio (1.33) writes
    ///   the query without a promise for the write, which is discarded, and
    ///   the query never answers, not even on cancellation. Such a lease is
    ///   given back before anything runs on it;
    /// * on one that is closing, the query fails with
    ///   `clientClosedConnection`, before it is sent: nothing of `body` took
    ///   effect (a transaction it began is rolled back with the session), so
    ///   it runs again;
    /// * a query sent as the connection's end arrives fails with the
    ///   server's reason (57P01 for a terminated session) or
    ///   `serverClosedConnection`. Reads (`idempotent`) run again; a write
    ///   may or may not have taken effect, and its error is reported.
    ///
    /// The pool replaces the closed connections meanwhile.
    func withConnection<T: Sendable>(idempotent: Bool = false, _ body: (PostgresConnection) async throws -> T)
        async throws -> T
    {
        for attempt in 0..<Self.leaseAttempts {
            // Time for the pool to see the connection close, before it hands it out again.
            if attempt > 0 { try await Task.sleep(for: .milliseconds(min(attempt, 20))) }
            do {
                let outcome: T? = try await client.withConnection { connection in
                    guard !connection.isClosed else { return nil }
                    return try await body(connection)
                }
                if let outcome { return outcome }
            } catch let error as PSQLError where Self.neverSent(error) || (idempotent && Self.sessionEnded(error)) {
                continue
            }
        }
        throw StoreError(.backend, "PostgreSQL at \(endpoint) closed every connection the pool gave")
    }

    static func neverSent(_ error: PSQLError) -> Bool {
        error.code == .clientClosedConnection
    }

    /// The session ended under the query: the server closed the connection,
    /// or said why it ends it (administrator, crash, shutdown).
    static func sessionEnded(_ error: PSQLError) -> Bool {
        error.code == .serverClosedConnection || (error.serverInfo?[.sqlState]).map { $0.hasPrefix("57P") } == true
    }

    /// With the pauses between them, about a second.
    static var leaseAttempts: Int { 64 }
}
