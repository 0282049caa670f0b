import CountersignCore
public import CountersignStore
import Foundation
public import Logging
import PostgresNIO
import Synchronization

/// The store for several broker instances: one PostgreSQL database through
/// a fixed set of connections (``PostgresConnections``).
///
/// Every write is atomic exactly as the contract says, however many
/// instances write at once. A write of one statement runs alone (a
/// statement is its own transaction). Deciding, creating a pending event
/// and enrolling by token or recovery code run at READ COMMITTED, ordered
/// by row locks and by a lock per user. Every
/// other write runs as one SERIALIZABLE transaction, retried when
/// PostgreSQL reports a serialization failure.
/// Writes that wake long-polls send `NOTIFY` after they commit (see
/// ``wake(_:on:)`` and ``followChanges(wake:resync:)``). Statements are
/// prepared once per connection (``PreparedStatements``). The connections are made from `init`
/// until ``close()``; while the database cannot be reached, every operation
/// fails within a few seconds (at once once that is known) with a
/// ``StoreError/Code/backend`` error.
public final class PostgresStore: CountersignStore, WakeFeed, StoreHealthReporting {
    let connections: PostgresConnections
    let logger: Logger
    /// `host:port/database`, for errors (never the password).
    let endpoint: String

    /// The channel writes notify on.
    static let channel = "countersign_wake"

    /// A store for `url` (`postgres://user:password@host:port/database`,
    /// several `host:port` separated by commas to try in turn,
    /// `?sslmode=require`, `verify-ca` or `verify-full` for TLS, with
    /// `&sslrootcert=PATH` for a CA of its own, `target_session_attrs=any`
    /// to take a server that refuses writes). It keeps
    /// `maximumConnections` open, one of them for LISTEN once
    /// ``followChanges(wake:resync:)`` runs.
    public init(url: String, logger: Logger, maximumConnections: Int = 20, patience: Patience = .init()) throws {
        var settings = try PostgresSettings(url: url)
        settings.size = max(1, maximumConnections - 1)
        settings.acquireWait = patience.connectionWait
        settings.queryDeadline = patience.answerWait
        settings.connectTimeout = patience.connectWait
        self.connections = try PostgresConnections(settings: settings, logger: logger)
        self.endpoint = settings.endpoint
        self.logger = logger
    }

    /// How long operations wait before the store calls its database
    /// unreachable: the defaults are what a broker runs with; tests of
    /// anything but outages, on a machine that may be very busy, wait longer.
    public struct Patience: Sendable {
        /// For a connection to come free, while none comes back to the pool.
        public var connectionWait: Duration = .seconds(3)
        /// For the answer to a query.
        public var answerWait: Duration = .seconds(5)
        /// For a new connection to be made, TLS and sign-in included.
        public var connectWait: Duration = .seconds(5)

        public init(
            connectionWait: Duration = .seconds(3), answerWait: Duration = .seconds(5),
            connectWait: Duration = .seconds(5)
        ) {
            self.connectionWait = connectionWait
            self.answerWait = answerWait
            self.connectWait = connectWait
        }
    }

    /// Closes the connections; the store is unusable after.
    public func close() async {
        await connections.close()
    }

    /// What the store knows of its database now, without asking it.
    public var health: StoreHealth { connections.health }

    /// Whether the database answers a query within `timeout`.
    public func probe(within timeout: Duration) async -> Bool {
        // While the database is known to be away, the read fails at once.
        let logger = logger
        return await Answer.within(timeout) {
            (try? await self.read { db in try await db.run("SELECT 1", logger: logger) }) != nil
        }
    }

    /// Applies the migrations this broker knows; refuses a database that
    /// has migrations it does not know (a newer broker's). Waits for a
    /// database that cannot be reached yet (until cancelled), and fails at
    /// once on one that refuses to let the broker in.
    public func migrate() async throws {
        try await waitingForTheDatabase { try await PostgresMigrations.apply(using: self) }
    }

    /// Runs one statement outside any transaction, for administration
    /// (`CREATE DATABASE`, `DROP DATABASE`), never with untrusted input.
    public func administer(_ statement: String) async throws {
        try await waitingForTheDatabase {
            _ = try await self.withConnection(hold: .unbounded) { session in
                try await session.run(PostgresStatement(unsafeSQL: statement), logger: self.logger)
            }
        }
    }

    /// Runs `body`, again while the database cannot be reached yet (until
    /// cancelled), and fails at once when it refuses the broker.
    private func waitingForTheDatabase(_ body: () async throws -> Void) async throws {
        var waited = ContinuousClock.now - .seconds(3600)
        while true {
            do {
                try await body()
                return
            } catch let error as PostgresConnections.Unavailable where !error.final {
                if ContinuousClock.now - waited >= .seconds(30) {
                    waited = .now
                    logger.warning("waiting for PostgreSQL at \(endpoint): \(error)")
                }
                try await Task.sleep(for: .milliseconds(250))
            } catch {
                throw mapped(error)
            }
        }
    }

    /// Any failure as the store reports it: PostgreSQL's own errors mapped
    /// to ``StoreError``, a failure to get a connection at all named with
    /// the address; cancellation and store errors as they are.
    func mapped(_ error: any Error) -> any Error {
        switch error {
        case is StoreError, is CancellationError, is ChangeRefusal: error
        case is PSQLError, is PostgresError: Self.storeError(error)
        case let error as PostgresConnections.Unavailable: StoreError(.backend, "\(error) (\(endpoint))")
        default: StoreError(.backend, "cannot reach PostgreSQL at \(endpoint): \(error)")
        }
    }

    // MARK: Transactions

    /// Runs `body` as one SERIALIZABLE transaction, again from the start
    /// (a few times) when PostgreSQL aborts it for a concurrent one.
    @discardableResult
    func write<T: Sendable>(
        hold: Hold = .query, _ body: @escaping @Sendable (PostgresSession) async throws -> T
    ) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await transaction(isolation: "SERIALIZABLE", hold: hold, body)
            } catch let error where Self.isRetryable(error) && attempt < 20 {
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...(2 << min(attempt, 6)))))
            } catch {
                throw mapped(error)
            }
        }
    }

    /// Runs `body` as one READ COMMITTED transaction, for writes whose
    /// statements order themselves by row locks, or by an advisory lock on
    /// `key` taken first (hashed to 64 bits: a collision only makes two keys
    /// wait for each other; released at commit or rollback).
    func readCommittedWrite<T: Sendable>(
        locking key: String? = nil, _ body: @escaping @Sendable (PostgresSession) async throws -> T
    ) async throws -> T {
        let logger = logger
        do {
            return try await transaction { db in
                // Sent with what follows it, which PostgreSQL runs once the lock is held.
                if let key { db.send("SELECT pg_advisory_xact_lock(hashtextextended(\(key), 0))", logger: logger) }
                return try await body(db)
            }
        } catch {
            throw mapped(error)
        }
    }

    /// An updater's transaction: ``readCommittedWrite(locking:_:)``, in
    /// which what the caller's rule threw (through ``applying(_:)``)
    /// rolls it back and reaches the caller untouched.
    func update<T: Sendable>(
        locking key: String? = nil, _ body: @escaping @Sendable (PostgresSession) async throws -> T
    ) async throws -> T {
        do {
            return try await readCommittedWrite(locking: key, body)
        } catch let refusal as ChangeRefusal {
            throw refusal.error
        }
    }

    /// Runs an updater's `change`, the caller's rule, inside ``update(locking:_:)``.
    static func applying<T>(_ change: () throws -> T) throws -> T {
        do {
            return try change()
        } catch {
            throw ChangeRefusal(error: error)
        }
    }

    /// What an updater's `change` threw, carried through the transaction
    /// (rolled back) to its caller: not a database error.
    struct ChangeRefusal: Error {
        let error: any Error
    }

    /// Runs `body` in one transaction at `isolation`.
    func transaction<T: Sendable>(
        isolation: String = "READ COMMITTED", hold: Hold = .query,
        _ body: @escaping @Sendable (PostgresSession) async throws -> T
    ) async throws -> T {
        try await withConnection(hold: hold) { session in
            // Sent with the body's first statement, and the commit with the
            // body's last writes: their answers are checked, not waited for
            // one by one.
            session.send(PostgresStatement(unsafeSQL: "BEGIN ISOLATION LEVEL \(isolation)"), logger: logger)
            let result: T
            do {
                result = try await body(session)
                try await session.run("COMMIT", logger: logger)
            } catch {
                // A connection left inside a transaction is no use to the next operation.
                try? await session.checkSent()
                do { try await session.run("ROLLBACK", logger: logger) } catch { session.connection.closeNow() }
                throw error
            }
            await wake(session.takeWakes(), on: session)
            return result
        }
    }

    /// Notifies every instance of `keys` (``WakeKey``), after the change
    /// that wakes them has committed.
    ///
    /// Not inside the change's own transaction: PostgreSQL serialises the
    /// commits of all transactions that notify, on one lock held through
    /// the commit's flush to disk, so each durable change that notified
    /// waited for every other one's fsync (docs/benchmarks.md). This
    /// statement commits without waiting for the disk (nothing in it needs
    /// to survive a crash of the database, after which every instance
    /// re-reads anyway). A wake lost because this instance stops between the
    /// two is made good by the resync every instance sends when it starts
    /// (``followChanges(wake:resync:)``), and by the waiters' own re-read
    /// when their hold ends.
    func wake(_ keys: [String], on session: PostgresSession) async {
        guard !keys.isEmpty else { return }
        do {
            try await session.run(
                """
                SELECT set_config('synchronous_commit', 'off', true), pg_notify(\(Self.channel), key)
                FROM unnest(\(Array(Set(keys)))::text[]) AS key
                """, logger: logger)
        } catch {
            logger.warning(
                "could not notify the other instances of a change; their waiters see it when their hold ends",
                metadata: ["error": "\(mapped(error))"])
        }
    }

    /// Runs one write statement, which PostgreSQL makes atomic by itself;
    /// its rows, if it returns any.
    ///
    /// Not in a SERIALIZABLE transaction: there, a unique index check takes
    /// predicate locks on whole index pages, and inserts of unrelated rows
    /// that share a page fail each other (two proof ids per round trip made
    /// most of the retries under load).
    @discardableResult
    func writeStatement(_ query: PostgresStatement) async throws -> [PostgresRandomAccessRow] {
        let logger = logger
        do {
            return try await withConnection { db in try await db.rows(query, logger: logger) }
        } catch {
            throw mapped(error)
        }
    }

    /// Runs reads on one pooled connection (again on another when the
    /// session ends under them).
    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresSession) async throws -> T) async throws -> T {
        do {
            return try await withConnection(idempotent: true) { connection in try await body(connection) }
        } catch {
            throw mapped(error)
        }
    }

    /// Whether PostgreSQL aborted the transaction for a concurrent one
    /// (a serialization failure or a deadlock): run it again.
    static func isRetryable(_ error: any Error) -> Bool {
        ["40001", "40P01"].contains(refusal(error)?.state ?? "")
    }

    static func storeError(_ error: any Error) -> StoreError {
        if let refusal = refusal(error), refusal.state == "23505" {
            return StoreError(.alreadyExists, refusal.message ?? "unique constraint violated")
        }
        return StoreError(.backend, String(reflecting: error))
    }

    /// What PostgreSQL said when it refused a statement.
    struct Refusal {
        let state: String
        let message: String?
        /// The function of PostgreSQL's that refused it.
        let routine: String?
    }

    /// PostgreSQL's refusal in postgres-nio's error, or in the older form
    /// in which it throws a prepared statement's (1.33); nil for any other
    /// failure.
    static func refusal(_ error: any Error) -> Refusal? {
        switch error {
        case let error as PSQLError:
            guard let info = error.serverInfo, let state = info[.sqlState] else { return nil }
            return Refusal(state: state, message: info[.message], routine: info[.routine])
        case PostgresError.server(let refusal):
            guard let state = refusal.fields[.sqlState] else { return nil }
            return Refusal(state: state, message: refusal.fields[.message], routine: refusal.fields[.routine])
        default:
            return nil
        }
    }
}

extension PostgresRandomAccessRow {
    /// The value in `column`, decoded from the binary format.
    ///
    /// postgres-nio (1.33) asks for every result column in binary, and
    /// labels a prepared statement's columns with the format its
    /// description gave before any was asked for (text): decoding them as
    /// labelled fails (``PreparedStatements``).
    func value<T: PostgresDecodable>(_ column: String, as _: T.Type = T.self) throws -> T {
        let cell = self[column]
        return try PostgresCell(
            bytes: cell.bytes, dataType: cell.dataType, format: .binary, columnName: cell.columnName,
            columnIndex: cell.columnIndex
        ).decode(T.self)
    }

    func date(_ column: String) throws -> Date {
        Date(timeIntervalSince1970: try value(column, as: Double.self))
    }

    func optionalDate(_ column: String) throws -> Date? {
        try value(column, as: Double?.self).map(Date.init(timeIntervalSince1970:))
    }
}

extension Date {
    /// How the store keeps times: seconds since 1970, as a double.
    var seconds: Double { timeIntervalSince1970 }
}
