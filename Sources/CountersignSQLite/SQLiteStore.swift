import CountersignCore
public import CountersignStore
public import Foundation
import GRDB

/// The embedded store: one SQLite file in WAL mode through GRDB.
///
/// Every write transaction is durable before it returns: the writer runs
/// with `synchronous=FULL`, so an acknowledged decision survives a power
/// cut, not only a crash of the broker.
public final class SQLiteStore: CountersignStore {
    /// How hard the store pushes writes to disk.
    public enum Durability: String, Sendable, CaseIterable {
        /// `synchronous=FULL`: every commit is fsynced before it returns.
        case full
        /// `synchronous=NORMAL`: safe against a crash of the broker, not of
        /// the machine.
        case relaxed
    }

    let pool: DatabasePool
    let committer: GroupCommitter

    /// How long a write waits for another process's lock on the file (a
    /// `device-broker apikey` command, a backup tool holding a write
    /// transaction) before it fails as ``StoreError/Code/backend``, which
    /// the broker answers 503. A request queued behind a blocked write
    /// waits at most about twice this: the blocked batch, then its own.
    public static let lockWait: TimeInterval = 3

    /// Opens (creating if needed) the database at `path` and migrates it.
    ///
    /// A file that is not a Countersign database (not SQLite at all,
    /// damaged, another application's, or migrated by a newer broker) is
    /// refused with a ``StoreError/Code/backend`` naming the file, before
    /// anything is written to it.
    public init(path: String, durability: Durability = .full) throws {
        try Self.checkExistingFile(at: path)
        var configuration = Configuration()
        // Another process may hold the file's write lock for a while; wait
        // for it, but not for so long that requests seem to hang.
        configuration.busyMode = .timeout(Self.lockWait)
        configuration.label = "countersign"
        // Reads run on the calling thread (see `read`): keep more reader
        // connections than there are threads to run them.
        configuration.maximumReaderCount = max(5, 2 * ProcessInfo.processInfo.activeProcessorCount)
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            committer = GroupCommitter(pool: pool)
            // DatabasePool sets synchronous=NORMAL on the writer after
            // prepareDatabase runs, so FULL has to be set here, after opening.
            let level = durability == .full ? "FULL" : "NORMAL"
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(level)") }
            let migrator = Self.migrator
            if try pool.read({ db in try migrator.hasBeenSuperseded(db) }) {
                throw StoreError(
                    .backend, "\(path) has migrations this broker does not know: it was upgraded by a newer broker")
            }
            try migrator.migrate(pool)
        } catch let error as DatabaseError {
            throw StoreError(.backend, "cannot open \(path): \(Self.storeError(error).message)")
        }
    }

    /// Writes a consistent copy of the database to `path` while the broker
    /// keeps running (SQLite's online backup API, never a file copy that
    /// could catch a write half done). Refuses an existing file.
    public func backup(to path: String) throws {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.alreadyExists, "\(path) exists; a backup never overwrites a file")
        }
        do {
            let destination = try DatabaseQueue(path: path)
            try pool.backup(to: destination)
            try destination.close()
        } catch let error as DatabaseError {
            throw StoreError(.backend, "backup to \(path) failed: \(error.message ?? error.description)")
        }
    }

    /// The writer's `PRAGMA synchronous` value (2 = FULL, 1 = NORMAL).
    public func synchronousLevel() throws -> Int {
        try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// The journal mode (`wal`).
    public func journalMode() throws -> String {
        try pool.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }

    /// Runs a write atomically (a savepoint of a group commit, see
    /// ``GroupCommitter``), durable when it returns; SQLite errors become
    /// ``StoreError``.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await committer.write(body)
        } catch let error as DatabaseError {
            throw Self.storeError(error)
        }
    }

    /// Runs a read, mapping SQLite errors to ``StoreError``.
    ///
    /// Every read of this store is one SELECT, which SQLite runs in a read
    /// transaction of its own: a consistent snapshot with no BEGIN and
    /// COMMIT around it. A read that needs more than one statement must open
    /// a transaction itself.
    ///
    /// The read runs on the calling thread, on one of the pool's reader
    /// connections. One indexed lookup in the page cache takes microseconds,
    /// less than the two thread switches of handing it to a reader's queue
    /// and back, which were the largest cost under load. In WAL mode a
    /// reader never waits for the writer; it could wait only if every
    /// reader connection were busy, and there are more of them than threads
    /// to run reads.
    ///
    /// Synchronous, so that `unsafeRead` is GRDB's blocking variant (from an
    /// async function the compiler would pick the one that hops to a reader
    /// queue), and so that the store's async reads, which await nothing,
    /// keep their temporaries on the thread's stack: a held long-poll keeps
    /// the async frames its connection went through (see docs/benchmarks.md).
    ///
    /// Out of line: inlined into every async read of the store, it and its
    /// error mapping took those frames from 80 to 600-900 bytes, which every
    /// held long-poll's connection kept (about 5-10 KB a poll in all).
    @inline(never)
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try pool.unsafeRead(body)
        } catch let error as DatabaseError {
            throw Self.storeError(error)
        }
    }

    /// Runs a read that may scan many rows on a reader connection's own
    /// queue, off the calling thread: one of Swift's cooperative threads,
    /// of which there are as many as cores, would be held for as long as
    /// the scan takes. Errors as ``read(_:)``.
    func scan<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(body)
        } catch let error as DatabaseError {
            throw Self.storeError(error)
        }
    }

    /// SQLite's error as the store's, with a sentence an operator can act
    /// on for the failures of an ordinary bad day.
    @inline(never)
    static func storeError(_ error: DatabaseError) -> StoreError {
        let detail = error.message ?? error.description
        switch error.resultCode {
        case .SQLITE_CONSTRAINT:
            return StoreError(.alreadyExists, error.message ?? "constraint violated")
        case .SQLITE_FULL:
            return StoreError(.backend, "the disk holding the database is full (\(detail))")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return StoreError(
                .backend,
                "another process has held the database's lock for over \(Int(lockWait)) s, a backup perhaps (\(detail))"
            )
        case .SQLITE_READONLY, .SQLITE_IOERR, .SQLITE_CANTOPEN, .SQLITE_PERM:
            return StoreError(
                .backend, "the database cannot be written: is its file system read-only or failing? (\(detail))")
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return StoreError(.backend, "the database file is damaged (\(detail))")
        default:
            return StoreError(.backend, error.description)
        }
    }

    /// A list of strings as a JSON array's text: a column that holds a
    /// list, or one bound parameter that `json_each(?)` reads as a set.
    static func jsonText(_ values: [String]) throws -> String {
        String(decoding: try JSONEncoder().encode(values), as: UTF8.self)
    }
}
