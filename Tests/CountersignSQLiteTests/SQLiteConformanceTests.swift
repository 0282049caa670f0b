import CountersignSQLite
import CountersignStore
import CountersignStoreTesting
import Foundation
import Testing

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

    @Test("a second connection to the same file sees committed writes")
    func reopen() async throws {
        let path = try temporaryDatabasePath()
        let first = try SQLiteStore(path: path)
        try await first.consumeProofID("j", deviceID: "d", expiresAt: .now + 60, now: .now)
        let second = try SQLiteStore(path: path)
        await #expect(throws: StoreError(.alreadyExists, "")) {
            try await second.consumeProofID("j", deviceID: "d", expiresAt: .now + 60, now: .now)
        }
    }
}
