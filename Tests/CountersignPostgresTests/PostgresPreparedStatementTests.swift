import CountersignCore
import CountersignPostgresTesting
import Foundation
import PostgresNIO
import Testing

@testable import CountersignPostgres

@Suite("PostgreSQL prepared statements")
struct PostgresPreparedStatementTests {
    @Test("a statement is prepared on its connection by its first run, and runs by name after")
    func prepared() async throws {
        try await withOneConnection { store, _ in
            _ = try await store.event(id: "ev_none")
            let prepared = try await store.read { db in
                try await db.rows("SELECT statement FROM pg_prepared_statements", logger: TestPostgres.logger)
                    .map { try $0.value("statement", as: String.self) }
            }
            #expect(prepared.contains { $0.contains("FROM events WHERE id = $1::TEXT") }, "\(prepared)")
            #expect(try await store.event(id: "ev_none") == nil)
        }
    }

    @Test("a migration that adds a column under prepared statements is not seen by callers")
    func columnAdded() async throws {
        try await withOneConnection { store, database in
            #expect(try await store.event(id: "ev_none") == nil)
            #expect(try await store.apiKey(id: "key_none") == nil)
            // What a newer broker's migration does while this one runs.
            try await TestPostgres.execute("ALTER TABLE events ADD COLUMN later text", in: database)
            try await TestPostgres.execute("ALTER TABLE api_keys ADD COLUMN later text", in: database)
            // PostgreSQL refuses a prepared `SELECT *` whose result changed
            // shape; the store runs it again on new connections.
            #expect(try await store.event(id: "ev_none") == nil)
            #expect(try await store.apiKey(id: "key_none") == nil)
        }
    }

    @Test("a statement's first run on a connection keeps its place among those sent after it")
    func firstRunKeepsItsPlace() async throws {
        try await withOneConnection { store, database in
            try await TestPostgres.execute("CREATE TABLE ordering (n integer)", in: database)
            let logger = TestPostgres.logger
            let count: PostgresStatement = "SELECT count(*) AS n FROM ordering WHERE n >= \(0)"
            // Prepared before, on the pool's only connection.
            _ = try await store.read { db in try await db.row(count, logger: logger) }
            let seen = try await store.transaction { db in
                // Sent unanswered, prepared first; the count, already
                // prepared, would have run before it if sent at once.
                db.send("INSERT INTO ordering (n) VALUES (\(1))", logger: logger)
                return try await db.row(count, logger: logger)?.value("n", as: Int64.self)
            }
            #expect(seen == 1)
        }
    }

    @Test("a statement whose preparation failed, in a transaction already aborted, is prepared again")
    func failedPreparation() async throws {
        try await withOneConnection { store, database in
            try await TestPostgres.execute("CREATE TABLE once (n integer PRIMARY KEY)", in: database)
            try await TestPostgres.execute("INSERT INTO once (n) VALUES (1)", in: database)
            let logger = TestPostgres.logger
            let read: PostgresStatement = "SELECT n FROM once WHERE n = \(1)"
            await #expect(throws: (any Error).self) {
                try await store.transaction { db in
                    // Fails, and aborts the transaction; the read's
                    // preparation, sent behind it, fails with it.
                    db.send("INSERT INTO once (n) VALUES (\(1))", logger: logger)
                    return try await db.row(read, logger: logger)
                }
            }
            let row = try await store.read { db in try await db.row(read, logger: logger) }
            #expect(try row?.value("n", as: Int32.self) == 1)
        }
    }

    @Test("only statements PostgreSQL prepares are prepared")
    func preparable() {
        #expect(PreparedStatements.preparable("SELECT 1"))
        #expect(PreparedStatements.preparable("\n    with spent AS (SELECT 1) SELECT * FROM spent"))
        #expect(PreparedStatements.preparable("INSERT INTO t VALUES (1)"))
        #expect(PreparedStatements.preparable("update t SET n = 1"))
        #expect(PreparedStatements.preparable("DELETE FROM t"))
        #expect(!PreparedStatements.preparable("BEGIN ISOLATION LEVEL SERIALIZABLE"))
        #expect(!PreparedStatements.preparable("COMMIT"))
        #expect(!PreparedStatements.preparable("CREATE TABLE t (n integer)"))
        #expect(!PreparedStatements.preparable("SELECTED"))
        #expect(!PreparedStatements.preparable(""))
        let statement: PostgresStatement = "SELECT * FROM t WHERE a = \("x") AND b = \(nil as Double?) AND c = \(2)"
        #expect(statement.preparable?.sql == "SELECT * FROM t WHERE a = $1::TEXT AND b = $2 AND c = $3::BIGINT")
        #expect(statement.query.sql == "SELECT * FROM t WHERE a = $1 AND b = $2 AND c = $3")
        #expect((PostgresStatement(unsafeSQL: "SELECT 1") as PostgresStatement).preparable == nil)
    }

    /// A migrated store whose pool holds one connection (and one for
    /// LISTEN), so that every operation runs on the same session; and its
    /// database's URL.
    private func withOneConnection(_ body: (PostgresStore, String) async throws -> Void) async throws {
        let url = try await TestPostgres.createDatabase()
        let store = try PostgresStore(
            url: url, logger: TestPostgres.logger, maximumConnections: 2, patience: TestPostgres.patient)
        let outcome = await Result {
            try await store.migrate()
            try await body(store, url)
        }
        await store.close()
        try await TestPostgres.dropDatabase(url)
        try outcome.get()
    }
}
