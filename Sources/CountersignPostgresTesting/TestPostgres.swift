import CountersignCore
public import CountersignPostgres
import Foundation
public import Logging

/// The throwaway cluster scripts/test.sh starts (`COUNTERSIGN_TEST_POSTGRES`),
/// with a fresh database per test.
public enum TestPostgres {
    struct Missing: Error, CustomStringConvertible {
        var description =
            "COUNTERSIGN_TEST_POSTGRES is not set: run scripts/test.sh, which starts a throwaway PostgreSQL cluster"
    }

    public static var logger: Logger {
        var logger = Logger(label: "postgres-test")
        logger.logLevel = .warning
        return logger
    }

    /// The cluster's URL; a failure, never a skip, without one.
    public static func clusterURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["COUNTERSIGN_TEST_POSTGRES"], !url.isEmpty else {
            throw Missing()
        }
        return url
    }

    /// The CA that signed the cluster's TLS certificate, for the host name
    /// `localhost` (`COUNTERSIGN_TEST_POSTGRES_CA`, set by scripts/test.sh).
    public static func certificateAuthority() throws -> String {
        guard let path = ProcessInfo.processInfo.environment["COUNTERSIGN_TEST_POSTGRES_CA"], !path.isEmpty else {
            throw Missing(
                description: "COUNTERSIGN_TEST_POSTGRES_CA is not set: run scripts/test.sh, which starts the cluster")
        }
        return path
    }

    /// The client certificate and key (PEM files, next to the CA) with which
    /// the role `countersign_cert` signs in; the cluster admits that role by
    /// certificate only.
    public static func clientCertificate() throws -> (certificate: String, key: String) {
        let directory = URL(fileURLWithPath: try certificateAuthority()).deletingLastPathComponent()
        return (
            directory.appendingPathComponent("client.pem").path, directory.appendingPathComponent("client.key").path
        )
    }

    /// Creates an empty database and returns its URL.
    public static func createDatabase() async throws -> String {
        let cluster = try clusterURL()
        let name = "cs_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try await admin(cluster, "CREATE DATABASE \(name)")
        var components = URLComponents(string: cluster)!
        components.path = "/" + name
        return components.string!
    }

    /// Drops a database made by ``createDatabase()``, closing its connections.
    public static func dropDatabase(_ url: String) async throws {
        let name = String(URLComponents(string: url)!.path.dropFirst())
        try await admin(try clusterURL(), "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// Runs one statement as the cluster's superuser.
    public static func execute(_ statement: String) async throws {
        try await admin(try clusterURL(), statement)
    }

    /// Runs one statement as the cluster's superuser in `database` (a URL
    /// from ``createDatabase()``).
    public static func execute(_ statement: String, in database: String) async throws {
        var components = URLComponents(string: try clusterURL())!
        components.path = URLComponents(string: database)!.path
        try await admin(components.string!, statement)
    }

    private static func admin(_ url: String, _ statement: String) async throws {
        let store = try PostgresStore(url: url, logger: logger, maximumConnections: 1, patience: patient)
        let result = await Result { try await store.administer(statement) }
        await store.close()
        try result.get()
    }

    /// Waits long enough for the answers of a very busy machine: these
    /// stores test what the store does, not what an outage does to it.
    /// A busy machine (a whole suite beside a loaded CPU) can take more
    /// than the default 5 s to make a connection: the tests wait longer.
    public static let patient = PostgresStore.Patience(
        connectionWait: .seconds(60), answerWait: .seconds(60), connectWait: .seconds(60))

    /// Runs `body` with a migrated store on a fresh database, then drops it.
    public static func withStore<T: Sendable>(
        maximumConnections: Int = 10, _ body: @escaping @Sendable (PostgresStore) async throws -> T
    ) async throws -> T {
        let url = try await createDatabase()
        let store = try PostgresStore(
            url: url, logger: logger, maximumConnections: maximumConnections, patience: patient)
        let result = await Result {
            try await store.migrate()
            return try await body(store)
        }
        await store.close()
        try await dropDatabase(url)
        return try result.get()
    }
}
