import Foundation
import Logging
import PostgresNIO
import Testing

@testable import CountersignPostgres

/// The throwaway cluster scripts/test.sh starts (`COUNTERSIGN_TEST_POSTGRES`),
/// with a fresh database per test.
enum TestPostgres {
    struct Missing: Error, CustomStringConvertible {
        let description =
            "COUNTERSIGN_TEST_POSTGRES is not set: run scripts/test.sh, which starts a throwaway PostgreSQL cluster"
    }

    static var logger: Logger {
        var logger = Logger(label: "postgres-test")
        logger.logLevel = .warning
        return logger
    }

    /// The cluster's URL; a failure, never a skip, without one.
    static func clusterURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["COUNTERSIGN_TEST_POSTGRES"], !url.isEmpty else {
            throw Missing()
        }
        return url
    }

    /// Creates an empty database and returns its URL.
    static func createDatabase() async throws -> String {
        let cluster = try clusterURL()
        let name = "cs_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try await admin(cluster) { client in
            try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        }
        var components = URLComponents(string: cluster)!
        components.path = "/" + name
        return components.string!
    }

    /// Drops a database made by ``createDatabase()``, closing its connections.
    static func dropDatabase(_ url: String) async throws {
        let name = String(URLComponents(string: url)!.path.dropFirst())
        try await admin(try clusterURL()) { client in
            try await client.query(
                PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"), logger: logger)
        }
    }

    private static func admin(_ url: String, _ body: @escaping @Sendable (PostgresClient) async throws -> Void)
        async throws
    {
        let store = try PostgresStore(url: url, logger: logger, maximumConnections: 1)
        let result = await Result { try await body(store.client) }
        await store.close()
        try result.get()
    }

    /// Runs `body` with a migrated store on a fresh database, then drops it.
    static func withStore<T: Sendable>(
        maximumConnections: Int = 10, _ body: @escaping @Sendable (PostgresStore) async throws -> T
    ) async throws -> T {
        let url = try await createDatabase()
        let store = try PostgresStore(url: url, logger: logger, maximumConnections: maximumConnections)
        let result = await Result {
            try await store.migrate()
            return try await body(store)
        }
        await store.close()
        try await dropDatabase(url)
        return try result.get()
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
