import ArgumentParser
import CountersignBroker
import CountersignSQLite
import CountersignStore
import Foundation

/// `device-broker backup`: a consistent copy of the SQLite store.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Write a consistent copy of the SQLite database to a new file while the broker runs.",
        discussion: """
            Uses SQLite's online backup API, never a file copy. To restore, stop the broker and put the file \
            in place of <data-dir>/countersign.sqlite (removing any -wal and -shm files beside it). \
            On PostgreSQL use pg_dump (docs/operations.md).
            """)

    @OptionGroup var store: StoreOptions

    @Option(help: "The file to write; it must not exist.")
    var to: String

    func run() async throws {
        let configuration = try store.configuration()
        guard configuration.databaseURL == nil else {
            throw ValidationError("on PostgreSQL, back up with pg_dump (docs/operations.md)")
        }
        let database = configuration.databasePath
        guard FileManager.default.fileExists(atPath: database) else {
            throw ValidationError("no database at \(database)")
        }
        let sqlite = try SQLiteStore(path: database)
        try sqlite.backup(to: to)
        print("Backed up \(database) to \(to).")
    }
}
