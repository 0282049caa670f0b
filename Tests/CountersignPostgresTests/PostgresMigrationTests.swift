import CountersignPostgresTesting
import CountersignStore
import CountersignStoreTesting
import Foundation
import PostgresNIO
import Testing

@testable import CountersignPostgres

@Suite("PostgreSQL migrations")
struct PostgresMigrationTests {
    @Test("instances starting together migrate once; a database a newer broker migrated is refused")
    func migrations() async throws {
        try await TestPostgres.withStore { store in
            // Ten more instances start at once on the migrated database.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<10 { group.addTask { try await store.migrate() } }
                try await group.waitForAll()
            }
            let logger = TestPostgres.logger
            let count = try await store.read { db in
                try await db.run("SELECT 1 FROM countersign_migrations", logger: logger)
            }
            #expect(count == PostgresMigrations.all.count)
            try await store.write { db in
                try await db.run(
                    "INSERT INTO countersign_migrations (id) VALUES ('v99-from-the-future')", logger: logger)
            }
            await #expect(throws: StoreError.self) { try await store.migrate() }
        }
    }

    @Test("outbox rows queued before receivers were kept share by their kind and target")
    func outboxRowsWithoutReceivers() async throws {
        try await TestPostgres.withStore { store in
            let logger = TestPostgres.logger
            try await StoreConformance.outboxRowsWithoutReceivers(store) { ids in
                let cleared = try await store.write { db in
                    try await db.run(
                        "UPDATE outbox SET receiver = NULL WHERE id = ANY(\(ids)) RETURNING 1", logger: logger)
                }
                #expect(cleared == ids.count)
            }
        }
    }
}
