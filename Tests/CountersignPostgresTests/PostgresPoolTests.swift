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
        // Four for the pool, and one kept for LISTEN (not used here).
        let store = try PostgresStore(
            url: url, logger: TestPostgres.logger, maximumConnections: 5, patience: TestPostgres.patient)
        let outcome = await Result {
            try await store.migrate()
            try await waitForConnections(4, of: store, database: name)

            try await TestPostgres.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'")
            // Reads at once and in turn, as the drop is noticed: none fails
            // and none is left waiting. Before the store gave back leases of
            // closed and closing connections and read again when the session
            // ended under a read, about one run in twenty left a read waiting
            // for good, and up to half of them failed.
            let failures = try await withinSeconds(20) {
                await withTaskGroup(of: String?.self) { group in
                    for _ in 0..<10 {
                        group.addTask { await Self.failure(of: { _ = try await store.event(id: "ev_none") }) }
                    }
                    var failures: [String] = []
                    for _ in 0..<20 {
                        if let failure = await Self.failure(of: { _ = try await store.event(id: "ev_none") }) {
                            failures.append(failure)
                        }
                    }
                    for await failure in group { if let failure { failures.append(failure) } }
                    return failures
                }
            }
            #expect(failures.isEmpty, "\(failures.count) of 30 reads failed after the drop: \(failures)")
            #expect(try await store.event(id: "ev_none") == nil)
            try await waitForConnections(4, of: store, database: name)
        }
        await store.close()
        try await TestPostgres.dropDatabase(url)
        try outcome.get()
    }

    private static func failure(of body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch {
            return String(reflecting: error)
        }
    }

    /// `body`'s result, or a recorded issue and cancellation when it takes
    /// longer than `seconds`.
    private func withinSeconds<T: Sendable>(_ seconds: Int, _ body: @escaping @Sendable () async -> T) async throws -> T
    {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let result = try await group.next()! else {
                Issue.record("still waiting after \(seconds) s")
                throw CancellationError()
            }
            return result
        }
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
