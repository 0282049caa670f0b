public import CountersignCore
import CountersignStore
import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    public func insertRADIUSClient(_ client: RADIUSClient, audit record: AuditRecord) async throws {
        let logger = logger
        try await readCommittedWrite { db in
            try await Self.requireUnrevokedKey(client.apiKeyID, in: db, logger: logger)
            let inserted = try await db.run(
                """
                INSERT INTO radius_clients (name, network, api_key_id, secret, mode, require_message_authenticator,
                    upstream_address, upstream_secret, upstream_requires_message_authenticator, created_at)
                VALUES (\(client.name), \(client.network), \(client.apiKeyID), \(client.secret),
                    \(client.mode.rawValue), \(client.requireMessageAuthenticator), \(client.upstream?.address),
                    \(client.upstream?.secret), \(client.upstream?.requireMessageAuthenticator ?? true),
                    \(client.createdAt.seconds))
                ON CONFLICT (name) DO NOTHING RETURNING 1
                """, logger: logger)
            guard inserted == 1 else {
                throw StoreError(.alreadyExists, "a RADIUS client is named \(client.name) already")
            }
            _ = try await Self.insert(record, in: db, logger: logger)
        }
    }

    public func radiusClients() async throws -> [RADIUSClient] {
        let logger = logger
        return try await read { db in
            try await db.rows("SELECT * FROM radius_clients ORDER BY name", logger: logger)
                .map(Self.radiusClient(row:))
        }
    }

    public func updateRADIUSClient(_ client: RADIUSClient, audit record: AuditRecord) async throws {
        let logger = logger
        try await readCommittedWrite { db in
            let updated = try await db.run(
                """
                UPDATE radius_clients SET network = \(client.network), secret = \(client.secret),
                    mode = \(client.mode.rawValue), require_message_authenticator = \(client.requireMessageAuthenticator),
                    upstream_address = \(client.upstream?.address), upstream_secret = \(client.upstream?.secret),
                    upstream_requires_message_authenticator = \(client.upstream?.requireMessageAuthenticator ?? true)
                WHERE name = \(client.name) RETURNING 1
                """, logger: logger)
            guard updated == 1 else { throw StoreError(.notFound, "no RADIUS client is named \(client.name)") }
            _ = try await Self.insert(record, in: db, logger: logger)
        }
    }

    public func deleteRADIUSClient(name: String, audit record: AuditRecord) async throws {
        let logger = logger
        try await readCommittedWrite { db in
            let deleted = try await db.run(
                "DELETE FROM radius_clients WHERE name = \(name) RETURNING 1", logger: logger)
            guard deleted == 1 else { throw StoreError(.notFound, "no RADIUS client is named \(name)") }
            _ = try await Self.insert(record, in: db, logger: logger)
        }
    }

    static func radiusClient(row: PostgresRandomAccessRow) throws -> RADIUSClient {
        guard let mode = RADIUSClient.Mode(rawValue: try row.value("mode")) else {
            throw StoreError(.backend, "unreadable RADIUS client row")
        }
        let upstream = try row.value("upstream_address", as: String?.self).map {
            RADIUSClient.Upstream(
                address: $0, secret: try row.value("upstream_secret", as: String?.self) ?? "",
                requireMessageAuthenticator: try row.value("upstream_requires_message_authenticator"))
        }
        return RADIUSClient(
            name: try row.value("name"), network: try row.value("network"), apiKeyID: try row.value("api_key_id"),
            secret: try row.value("secret"), mode: mode,
            requireMessageAuthenticator: try row.value("require_message_authenticator"), upstream: upstream,
            createdAt: try row.date("created_at"))
    }
}
