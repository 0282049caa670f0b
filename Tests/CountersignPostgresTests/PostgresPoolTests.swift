import CountersignCore
import CountersignPostgresTesting
import Foundation
import PostgresNIO
import Testing

@testable import CountersignPostgres

@Suite("PostgreSQL connections")
struct PostgresPoolTests {
    @Test("the pool opens its connections at once and replaces the ones PostgreSQL drops")
    func droppedConnections() async throws {
        let url = try await TestPostgres.createDatabase()
        let name = String(URLComponents(string: url)!.path.dropFirst())
        let store = try PostgresStore(url: url, logger: TestPostgres.logger, maximumConnections: 4)
        let outcome = await Result {
            try await store.migrate()
            try await waitForConnections(4, of: store, database: name)

            try await TestPostgres.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'")
            // A request may still meet a connection whose end the pool has not seen yet.
            var failures = 0
            for _ in 0..<20 {
                do { _ = try await store.event(id: "ev_none") } catch { failures += 1 }
            }
            #expect(failures <= 4, "\(failures) reads failed after the drop")
            print("reads that failed after every connection was dropped: \(failures) of 20")
            #expect(try await store.event(id: "ev_none") == nil)
            try await waitForConnections(4, of: store, database: name)
        }
        await store.close()
        try await TestPostgres.dropDatabase(url)
        try outcome.get()
    }

    /// Waits until the database has `count` connections of the store.
    private func waitForConnections(_ count: Int, of store: PostgresStore, database: String) async throws {
        let logger = TestPostgres.logger
        var open = 0
        for _ in 0..<100 {
            open = try await store.read { db in
                try await db.row(
                    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = \(database)", logger: logger
                )?.value("n", as: Int.self) ?? 0
            }
            if open >= count { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("\(open) connections open, expected \(count)")
    }
}
