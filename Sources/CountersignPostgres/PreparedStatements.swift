import NIOCore
import PostgresNIO
import Synchronization

/// The statements prepared on each of the pool's connections.
///
/// PostgreSQL parses, analyses and plans an unnamed statement each time it
/// runs one: over a round trip's statements, about 40 % of its CPU
/// (docs/benchmarks.md). So a statement is prepared on a connection the
/// first time it runs there, and from then on only bound and executed:
/// PostgreSQL keeps it parsed and, once its plan cache settles on a
/// generic plan, planned.
///
/// Through postgres-nio's `prepare(query:)` (1.33), which takes the SQL at
/// run time, rather than its `PostgresPreparedStatement`, which names a
/// statement by a Swift type with static SQL (the store's statements are
/// interpolated where they run), sends a statement's first run after
/// whatever was sent behind it (reordering a transaction's pipelined
/// statements), and answers every later run of a statement whose
/// preparation failed with that failure, for the connection's life.
///
/// At most ``limit`` statements are kept per connection; past them a
/// statement runs unprepared.
final class PreparedStatements: Sendable {
    static let limit = 500

    /// Per open connection, its prepared statements by their SQL.
    private let prepared = Mutex<[PostgresConnection.ID: [String: EventLoopFuture<PreparedQuery>]]>([:])

    /// Whether `sql` is prepared, or being prepared, on `connection`.
    func isPrepared(_ sql: String, on connection: PostgresConnection) -> Bool {
        prepared.withLock { $0[connection.id]?[sql] != nil }
    }

    /// Runs `statement` on `connection`, from its event loop: prepared
    /// there first if it is not yet; unprepared past the ``limit``.
    func run(_ statement: PostgresStatement, on connection: PostgresConnection, logger: Logger)
        -> EventLoopFuture<[PostgresRow]>
    {
        guard let preparable = statement.preparable else {
            return connection.query(statement.query, logger: logger).map(\.rows)
        }
        let (known, full) = prepared.withLock { prepared in
            let statements = prepared[connection.id]
            return (statements?[preparable.sql], (statements?.count ?? 0) >= Self.limit)
        }
        if let known { return known.flatMap { $0.execute(preparable.values) } }
        guard !full else { return connection.query(statement.query, logger: logger).map(\.rows) }
        let preparing = connection.prepare(query: preparable.sql)
        prepared.withLock { $0[connection.id, default: [:]][preparable.sql] = preparing }
        preparing.whenFailure { [self] _ in
            // Prepared again on the next run (it failed in a transaction already aborted, say).
            _ = prepared.withLock { $0[connection.id]?.removeValue(forKey: preparable.sql) }
        }
        return preparing.flatMap { query in
            // The answer came on the event loop, where the connection closes.
            guard !connection.isClosed else {
                return connection.eventLoop.makeFailedFuture(PostgresConnections.Closed())
            }
            return query.execute(preparable.values)
        }
    }

    /// `connection` closed, and its statements with it.
    func closed(_ connection: PostgresConnection) {
        _ = prepared.withLock { $0.removeValue(forKey: connection.id) }
    }

    /// Whether `sql` is a statement PostgreSQL prepares: a SELECT, INSERT,
    /// UPDATE, DELETE or WITH (not BEGIN, COMMIT, DDL).
    static func preparable(_ sql: String) -> Bool {
        let word = sql.utf8.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\t") }
            .prefix { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0 | 0x20) }
        return ["SELECT", "INSERT", "UPDATE", "DELETE", "WITH"].contains(
            String(decoding: word, as: UTF8.self).uppercased())
    }
}
