public import CountersignCore
import CountersignStore
import Foundation
import GRDB

extension SQLiteStore {
    public func insertRADIUSClient(_ client: RADIUSClient, audit record: AuditRecord) async throws {
        try await write { db in
            try Self.requireUnrevokedKey(client.apiKeyID, in: db)
            try db.execute(
                sql: """
                    INSERT INTO radius_clients (name, network, api_key_id, secret, mode,
                        require_message_authenticator, upstream_address, upstream_secret,
                        upstream_requires_message_authenticator, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING
                    """,
                arguments: [
                    client.name, client.network, client.apiKeyID, client.secret, client.mode.rawValue,
                    client.requireMessageAuthenticator, client.upstream?.address, client.upstream?.secret,
                    client.upstream?.requireMessageAuthenticator ?? true, client.createdAt.timeIntervalSince1970,
                ])
            guard db.changesCount == 1 else {
                throw StoreError(.alreadyExists, "a RADIUS client is named \(client.name) already")
            }
            try Self.insert(record, in: db)
        }
    }

    public func radiusClients() async throws -> [RADIUSClient] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM radius_clients ORDER BY name").map(Self.radiusClient(row:))
        }
    }

    public func updateRADIUSClient(_ client: RADIUSClient, audit record: AuditRecord) async throws {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE radius_clients SET network = ?, secret = ?, mode = ?, require_message_authenticator = ?,
                        upstream_address = ?, upstream_secret = ?, upstream_requires_message_authenticator = ?
                    WHERE name = ?
                    """,
                arguments: [
                    client.network, client.secret, client.mode.rawValue, client.requireMessageAuthenticator,
                    client.upstream?.address, client.upstream?.secret,
                    client.upstream?.requireMessageAuthenticator ?? true, client.name,
                ])
            guard db.changesCount == 1 else { throw StoreError(.notFound, "no RADIUS client is named \(client.name)") }
            try Self.insert(record, in: db)
        }
    }

    public func deleteRADIUSClient(name: String, audit record: AuditRecord) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM radius_clients WHERE name = ?", arguments: [name])
            guard db.changesCount == 1 else { throw StoreError(.notFound, "no RADIUS client is named \(name)") }
            try Self.insert(record, in: db)
        }
    }

    static func radiusClient(row: Row) throws -> RADIUSClient {
        guard let mode = RADIUSClient.Mode(rawValue: row["mode"]) else {
            throw StoreError(.backend, "unreadable RADIUS client row")
        }
        let upstream = (row["upstream_address"] as String?).map {
            RADIUSClient.Upstream(
                address: $0, secret: row["upstream_secret"] ?? "",
                requireMessageAuthenticator: row["upstream_requires_message_authenticator"])
        }
        return RADIUSClient(
            name: row["name"], network: row["network"], apiKeyID: row["api_key_id"], secret: row["secret"], mode: mode,
            requireMessageAuthenticator: row["require_message_authenticator"], upstream: upstream,
            createdAt: Date(timeIntervalSince1970: row["created_at"]))
    }
}
