import CountersignCore
import CountersignStore
import CountersignStoreTesting
import Foundation
import GRDB
import Testing

@testable import CountersignSQLite

/// A fresh database file in a fresh temporary directory.
func temporaryDatabasePath() throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("countersign-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent("countersign.sqlite").path
}

@Suite("SQLite store")
struct SQLiteConformanceTests {
    @Test("conformance", arguments: StoreConformance.cases)
    func conformance(_ check: StoreConformance.Case) async throws {
        try await check.run(try SQLiteStore(path: try temporaryDatabasePath()))
    }

    @Test("a durable store runs WAL with synchronous=FULL on the writer")
    func durability() throws {
        let store = try SQLiteStore(path: try temporaryDatabasePath())
        #expect(try store.journalMode() == "wal")
        #expect(try store.synchronousLevel() == 2)
        let relaxed = try SQLiteStore(path: try temporaryDatabasePath(), durability: .relaxed)
        #expect(try relaxed.synchronousLevel() == 1)
    }

    @Test("outbox rows queued before receivers were kept share by their kind and target")
    func outboxRowsWithoutReceivers() async throws {
        let path = try temporaryDatabasePath()
        try await StoreConformance.outboxRowsWithoutReceivers(try SQLiteStore(path: path)) { ids in
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in
                for id in ids { try db.execute(sql: "UPDATE outbox SET receiver = NULL WHERE id = ?", arguments: [id]) }
            }
            try queue.close()
        }
    }

    @Test("a claim that would take nothing leaves the writer alone, though messages are due behind a full share")
    func claimWithoutTakingTheWriter() async throws {
        let path = try temporaryDatabasePath()
        let store = try SQLiteStore(path: path)
        let hooks = "https://hooks.example:443"
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            for index in 0..<50 {
                try db.execute(
                    sql: """
                        INSERT INTO outbox (id, kind, target, receiver, payload, created_at, deliver_until,
                            next_attempt_at, attempts, state)
                        VALUES (?, 'webhook', 'wh_slow', ?, x'00', 1, 1000, ?, 0, 'queued')
                        """, arguments: ["msg_\(index)", hooks, Double(index)])
            }
        }
        try queue.close()
        let now = Date(timeIntervalSince1970: 100)
        let before = store.committer.commits
        let none = try await store.claimOutboxMessages(
            limit: 64, lease: 30, claim: "c1", now: now, share: OutboxShare(perReceiver: 8, inFlight: [hooks: 8]))
        #expect(none.isEmpty)
        #expect(store.committer.commits == before, "no write transaction for a claim of nothing")
        let some = try await store.claimOutboxMessages(
            limit: 64, lease: 30, claim: "c2", now: now, share: OutboxShare(perReceiver: 8, inFlight: [hooks: 5]))
        #expect(some.map(\.message.id) == ["msg_0", "msg_1", "msg_2"], "what the share leaves room for")
        #expect(store.committer.commits > before)
    }

    @Test("a second connection to the same file sees committed writes")
    func reopen() async throws {
        let path = try temporaryDatabasePath()
        let first = try SQLiteStore(path: path)
        try await first.consumeProofID("j", deviceID: "d", expiresAt: .now + 60, now: .now)
        let second = try SQLiteStore(path: path)
        await #expect(throws: StoreError(.replayed, "")) {
            try await second.consumeProofID("j", deviceID: "d", expiresAt: .now + 60, now: .now)
        }
    }
}

@Suite("SQLite migrations")
struct SQLiteMigrationTests {
    @Test("a database a newer broker migrated is refused, and left as it was")
    func newerSchema() async throws {
        let path = try temporaryDatabasePath()
        _ = try SQLiteStore(path: path)
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99-from-the-future')")
        }
        try queue.close()
        #expect(throws: StoreError.self) { try SQLiteStore(path: path) }
        let applied = try await DatabaseQueue(path: path).read { db in
            try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
        }
        #expect(applied.contains("v99-from-the-future") && applied.contains("v7-codes"))
    }
}

@Suite("SQLite group commit")
struct GroupCommitTests {
    @Test("concurrent writes share commits; each succeeds or fails alone; all are durable when answered")
    func groupCommit() async throws {
        let path = try temporaryDatabasePath()
        let store = try SQLiteStore(path: path)
        let before = store.committer.commits
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<300 {
                group.addTask {
                    // Every third id repeats an earlier one: those must fail alone.
                    let id = index % 3 == 2 ? "ck_\(index - 1)" : "ck_\(index)"
                    do {
                        try await store.insertAPIKey(
                            APIKey(id: id, name: "app \(index)", secretDigest: Data([1]), createdAt: Date()))
                        return true
                    } catch {
                        return false
                    }
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 200 && outcomes.filter { !$0 }.count == 100)
        let commits = store.committer.commits - before
        #expect(commits < 300, "writes were grouped: \(commits) commits for 300 writes")
        // What was acknowledged is there for another connection.
        let count = try await DatabaseQueue(path: path).read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM api_keys") ?? 0
        }
        #expect(count == 200)
        print("group commit: 300 concurrent writes in \(commits) commits")
    }
}
