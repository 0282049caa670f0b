import NIOCore
import PostgresNIO
import Synchronization

/// The statements prepared on each of the pool's connections.
///
/// PostgreSQL parses, analyses and plans an unnamed statement each time it
/// runs one: over a round trip's statements, about 40 % of its CPU
/// (docs/benchmarks.md). So a statement is prepared on a connection after
/// the first time it runs there, and from then on only bound and executed:
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
/// `prepare(query:)` lets the server infer the parameters' types, so the
/// statement casts each (``PostgresStatement/Preparable``).
///
/// At most ``limit`` statements are kept per connection; past them a
/// statement runs unprepared.
final class PreparedStatements: Sendable {
    static let limit = 500

    /// A statement on one connection.
    private enum State {
        /// Its PREPARE is sent, not yet answered.
        case preparing
        case prepared(PreparedQuery)
    }

    /// Per open connection, its statements by their SQL.
    private let prepared = Mutex<[PostgresConnection.ID: [String: State]]>([:])

    /// Runs `statement` on `connection`, from its event loop: by name once
    /// it is prepared there. Until then it runs unprepared, as the statement
    /// to prepare, and its first run sends the PREPARE right behind it, which
    /// nothing waits for: a first run costs no extra wait, and statements sent
    /// after it keep their order.
    func run(_ statement: PostgresStatement, on connection: PostgresConnection, logger: Logger)
        -> EventLoopFuture<[PostgresRow]>
    {
        guard let preparable = statement.preparable else {
            return connection.query(statement.query, logger: logger).map(\.rows)
        }
        let (state, full) = prepared.withLock { prepared in
            let statements = prepared[connection.id]
            return (statements?[preparable.sql], (statements?.count ?? 0) >= Self.limit)
        }
        if case .prepared(let query) = state { return query.execute(preparable.values) }
        var bindings = PostgresBindings(capacity: preparable.values.count)
        for value in preparable.values { bindings.append(value) }
        let answer = connection.query(PostgresQuery(unsafeSQL: preparable.sql, binds: bindings), logger: logger)
            .map(\.rows)
        guard state == nil, !full else { return answer }
        prepared.withLock { $0[connection.id, default: [:]][preparable.sql] = .preparing }
        connection.prepare(query: preparable.sql).whenComplete { [self] result in
            prepared.withLock { prepared in
                guard prepared[connection.id] != nil else { return }
                switch result {
                case .success(let query): prepared[connection.id]?[preparable.sql] = .prepared(query)
                // Prepared again on a later run (it failed in a transaction already aborted, say).
                case .failure: prepared[connection.id]?.removeValue(forKey: preparable.sql)
                }
            }
        }
        return answer
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
