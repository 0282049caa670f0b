import CountersignCore
public import CountersignStore
import Foundation
public import Logging
import PostgresNIO

/// The store for several broker instances: one PostgreSQL database through
/// a postgres-nio connection pool.
///
/// Every write is atomic exactly as the contract says, however many
/// instances write at once. A write of one statement runs alone (a
/// statement is its own transaction). Deciding and creating a pending event
/// run at READ COMMITTED, ordered by row locks and by a lock per user. Every
/// other write runs as one SERIALIZABLE transaction, retried when
/// PostgreSQL reports a serialization failure.
/// Writes that wake long-polls send `NOTIFY` in the same transaction (see
/// ``followChanges(wake:resync:)``). The pool runs from `init` until
/// ``close()``.
public final class PostgresStore: CountersignStore, WakeFeed {
    let client: PostgresClient
    let logger: Logger
    /// `host:port/database`, for errors (never the password).
    let endpoint: String
    private let runner: Task<Void, Never>

    /// The channel writes notify on.
    static let channel = "countersign_wake"

    /// A store for `url` (`postgres://user:password@host:port/database`,
    /// `?sslmode=require`, `verify-ca` or `verify-full` for TLS, with
    /// `&sslrootcert=PATH` for a CA of its own).
    public init(url: String, logger: Logger, maximumConnections: Int = 20) throws {
        var configuration = try Self.configuration(url: url)
        configuration.options.maximumConnections = maximumConnections
        // The pool arms an idle-timeout timer and a keep-alive timer (each a
        // sleeping task) every time a connection goes back to it, that is
        // after every query; under load that was a tenth of the broker's
        // CPU. Connections stay open instead; one that PostgreSQL drops is
        // noticed when its socket closes and replaced.
        configuration.options.minimumConnections = maximumConnections
        configuration.options.keepAliveBehavior = nil
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.endpoint = "\(configuration.host ?? "?"):\(configuration.port ?? 5432)/\(configuration.database ?? "")"
        self.logger = logger
        // Started at once, so the pool runs before the first query leases a connection.
        self.runner = Task.immediate { await client.run() }
    }

    /// Closes the pool's connections; the store is unusable after.
    public func close() async {
        runner.cancel()
        await runner.value
    }

    /// Applies the migrations this broker knows; refuses a database that
    /// has migrations it does not know (a newer broker's).
    public func migrate() async throws {
        do {
            try await PostgresMigrations.apply(using: self)
        } catch {
            throw mapped(error)
        }
    }

    static func configuration(url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme),
            let host = components.host, let user = components.user
        else {
            throw StoreError(.backend, "not a postgres:// URL: give postgres://user[:password]@host[:port]/database")
        }
        let parameter = { (name: String) in components.queryItems?.first { $0.name == name }?.value }
        let tls = try Self.tls(
            mode: parameter("sslmode") ?? "prefer", rootCertificate: parameter("sslrootcert"),
            clientCertificate: parameter("sslcert"), clientKey: parameter("sslkey"))
        let database = components.path.count > 1 ? String(components.path.dropFirst()) : nil
        return PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user,
            password: components.password?.removingPercentEncoding, database: database, tls: tls)
    }

    /// TLS as libpq's `sslmode` means it: `prefer` and `require` encrypt
    /// without checking who answers (unless `sslrootcert` is given to
    /// `require`, which then acts as `verify-ca`), `verify-ca` checks the
    /// certificate chain, `verify-full` the host name too. `sslrootcert` names
    /// a PEM file of the CAs to trust instead of the system's. `sslcert` and
    /// `sslkey` name the PEM files of a client certificate (with its chain)
    /// and its key, for a server that authenticates clients by certificate.
    static func tls(mode: String, rootCertificate: String?, clientCertificate: String? = nil, clientKey: String? = nil)
        throws -> PostgresClient.Configuration.TLS
    {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let rootCertificate {
            guard FileManager.default.isReadableFile(atPath: rootCertificate) else {
                throw StoreError(.backend, "cannot read the sslrootcert file \(rootCertificate)")
            }
            configuration.trustRoots = .file(rootCertificate)
        }
        switch (clientCertificate, clientKey) {
        case (nil, nil):
            break
        case (let certificate?, let key?):
            guard mode != "disable" else { throw StoreError(.backend, "sslcert and sslkey need TLS: sslmode=disable") }
            (configuration.certificateChain, configuration.privateKey) = try clientIdentity(
                certificate: certificate, key: key)
        default:
            throw StoreError(.backend, "give sslcert and sslkey together: a client certificate and its key")
        }
        switch mode {
        case "disable":
            return .disable
        case "allow", "prefer":
            configuration.certificateVerification = .none
            return .prefer(configuration)
        case "require" where rootCertificate == nil:
            configuration.certificateVerification = .none
            return .require(configuration)
        case "require", "verify-ca":
            configuration.certificateVerification = .noHostnameVerification
            return .require(configuration)
        case "verify-full":
            return .require(configuration)
        default:
            throw StoreError(.backend, "unknown sslmode \(mode)")
        }
    }

    /// A client certificate chain and its private key, from PEM files.
    private static func clientIdentity(certificate: String, key: String) throws -> (
        [NIOSSLCertificateSource], NIOSSLPrivateKeySource
    ) {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificate)
        } catch {
            throw StoreError(.backend, "cannot read the sslcert file \(certificate): \(error)")
        }
        guard !chain.isEmpty else { throw StoreError(.backend, "the sslcert file \(certificate) has no certificate") }
        do {
            return (chain.map { .certificate($0) }, .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
        } catch {
            throw StoreError(.backend, "cannot read the sslkey file \(key): \(error)")
        }
    }

    /// Runs one statement outside any transaction, for administration
    /// (`CREATE DATABASE`, `DROP DATABASE`), never with untrusted input.
    public func administer(_ statement: String) async throws {
        do {
            _ = try await withConnection { connection in
                try await connection.run(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        } catch {
            throw mapped(error)
        }
    }

    /// Any failure as the store reports it: PostgreSQL's own errors mapped
    /// to ``StoreError``, a failure to get a connection at all named with
    /// the address; cancellation and store errors as they are.
    func mapped(_ error: any Error) -> any Error {
        switch error {
        case is StoreError, is CancellationError: error
        case let error as PSQLError: Self.storeError(error)
        default: StoreError(.backend, "cannot reach PostgreSQL at \(endpoint): \(error)")
        }
    }

    // MARK: Transactions

    /// Runs `body` as one SERIALIZABLE transaction, again from the start
    /// (a few times) when PostgreSQL aborts it for a concurrent one.
    @discardableResult
    func write<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await transaction(isolation: "SERIALIZABLE", body)
            } catch let error as PSQLError where Self.isRetryable(error) && attempt < 20 {
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
        locking key: String? = nil, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let logger = logger
        do {
            return try await transaction { db in
                if let key {
                    try await db.run("SELECT pg_advisory_xact_lock(hashtextextended(\(key), 0))", logger: logger)
                }
                return try await body(db)
            }
        } catch {
            throw mapped(error)
        }
    }

    /// Runs `body` in one transaction at `isolation`.
    func transaction<T: Sendable>(
        isolation: String = "READ COMMITTED", _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await withConnection { connection in
            try await connection.run(PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL \(isolation)"), logger: logger)
            do {
                let result = try await body(connection)
                try await connection.run("COMMIT", logger: logger)
                return result
            } catch {
                _ = try? await connection.run("ROLLBACK", logger: logger)
                throw error
            }
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
    func writeStatement(_ query: PostgresQuery) async throws -> [PostgresRandomAccessRow] {
        let logger = logger
        do {
            return try await withConnection { db in try await db.rows(query, logger: logger) }
        } catch {
            throw mapped(error)
        }
    }

    /// Runs reads on one pooled connection (again on another when the
    /// session ends under them).
    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await withConnection(idempotent: true) { connection in try await body(connection) }
        } catch {
            throw mapped(error)
        }
    }

    static func isRetryable(_ error: PSQLError) -> Bool {
        ["40001", "40P01"].contains(error.serverInfo?[.sqlState] ?? "")
    }

    static func storeError(_ error: PSQLError) -> StoreError {
        if error.serverInfo?[.sqlState] == "23505" {
            return StoreError(.alreadyExists, error.serverInfo?[.message] ?? "unique constraint violated")
        }
        return StoreError(.backend, String(reflecting: error))
    }

    // MARK: Wake-ups across instances

    public func followChanges(
        wake: @escaping @Sendable (String) -> Void, resync: @escaping @Sendable () -> Void
    ) async throws {
        while !Task.isCancelled {
            do {
                try await withConnection { connection in
                    try await connection.listen(on: Self.channel) { notifications in
                        // Listening now: anything committed before may have been missed.
                        resync()
                        for try await notification in notifications { wake(notification.payload) }
                    }
                }
            } catch  where !Task.isCancelled {
                // Listening again calls resync: waiters re-check the store then.
                logger.warning(
                    "lost the LISTEN connection; waiters re-check the store", metadata: ["error": "\(error)"])
            }
            // Also after a listen that ended without an error (its connection
            // closed): listening again at once could spin.
            try? await Task.sleep(for: .milliseconds(200))
        }
    }
}

extension PostgresConnection {
    /// The rows of a query, read into memory.
    func rows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRandomAccessRow] {
        var rows: [PostgresRandomAccessRow] = []
        for try await row in try await self.query(query, logger: logger) { rows.append(row.makeRandomAccess()) }
        return rows
    }

    /// The first row of a query, if any.
    func row(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRandomAccessRow? {
        try await rows(query, logger: logger).first
    }

    /// Runs a statement; with `RETURNING`, how many rows it touched.
    @discardableResult
    func run(_ query: PostgresQuery, logger: Logger) async throws -> Int {
        try await rows(query, logger: logger).count
    }

    /// Wakes long-polls on every instance once the transaction commits.
    func notify(_ key: String, logger: Logger) async throws {
        try await run("SELECT pg_notify(\(PostgresStore.channel), \(key))", logger: logger)
    }
}

extension PostgresRandomAccessRow {
    func value<T: PostgresDecodable>(_ column: String, as _: T.Type = T.self) throws -> T {
        try self[column].decode(T.self)
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
