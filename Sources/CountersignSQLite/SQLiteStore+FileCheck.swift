import CountersignStore
import Foundation
import GRDB

extension SQLiteStore {
    /// Refuses a file at `path` that is not a Countersign database, before
    /// anything opens it for writing: opening would switch another
    /// application's database to WAL and add this broker's tables to it.
    ///
    /// Absent and empty files pass (SQLite makes a new database of them);
    /// so does a Countersign database of any version (a newer broker's is
    /// refused after, by its migrations). The check reads the header and
    /// the schema only: a database damaged deeper down is found by the
    /// reads that meet the damage, and by `PRAGMA integrity_check`.
    public static func checkExistingFile(at path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { return }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        try? handle.close()
        guard !header.isEmpty else { return }
        guard header == Data("SQLite format 3\0".utf8) else {
            throw StoreError(.backend, "\(path) is not an SQLite database (its first bytes are something else)")
        }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(lockWait)
        let tables: Set<String>
        let ours: Bool
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            (tables, ours) = try queue.read { db in
                let tables = Set(
                    try String.fetchAll(
                        db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"))
                guard tables.contains("grdb_migrations") else { return (tables, false) }
                let first = try String.fetchOne(
                    db, sql: "SELECT identifier FROM grdb_migrations WHERE identifier = 'v1'")
                return (tables, first != nil)
            }
        } catch let error as DatabaseError {
            throw StoreError(.backend, "\(path) cannot be read as a database: \(storeError(error).message)")
        }
        guard tables.isEmpty || (ours && tables.isSuperset(of: ["events", "devices", "api_keys"])) else {
            throw StoreError(.backend, "\(path) is another application's SQLite database, not Countersign's")
        }
    }
}
