public import CountersignCore
import CountersignStore
import Foundation
import PostgresNIO

extension PostgresStore {
    public func approverGroups(issuer: String) async throws -> [ApproverGroup] {
        let logger = logger
        return try await read { db in
            try await db.rows(
                "SELECT * FROM approver_groups WHERE issuer = \(issuer) ORDER BY name COLLATE \"C\"", logger: logger
            ).map(Self.approverGroup(row:))
        }
    }

    public func approverGroup(issuer: String, name: String) async throws -> ApproverGroup? {
        let logger = logger
        return try await read { db in
            try await db.row(
                "SELECT * FROM approver_groups WHERE issuer = \(issuer) AND name = \(name)", logger: logger
            ).map(Self.approverGroup(row:))
        }
    }

    @discardableResult
    public func putApproverGroup(_ group: ApproverGroup) async throws -> Bool {
        let rows = try await writeStatement(
            """
            INSERT INTO approver_groups (issuer, name, users, updated_at, updated_via)
            SELECT id, \(group.name), \(group.users), \(group.updatedAt.seconds), \(group.updatedVia)
            FROM api_keys WHERE id = \(group.issuer) AND revoked_at IS NULL
            ON CONFLICT (issuer, name) DO UPDATE
            SET users = excluded.users, updated_at = excluded.updated_at, updated_via = excluded.updated_via
            RETURNING (xmax = 0) AS created
            """)
        guard let row = rows.first else { throw StoreError(.notFound, "no such API key") }
        return try row.value("created", as: Bool.self)
    }

    public func deleteApproverGroup(issuer: String, name: String) async throws {
        let rows = try await writeStatement(
            "DELETE FROM approver_groups WHERE issuer = \(issuer) AND name = \(name) RETURNING 1")
        guard !rows.isEmpty else { throw StoreError(.notFound, "no approver group \(name)") }
    }

    private static func approverGroup(row: PostgresRandomAccessRow) throws -> ApproverGroup {
        ApproverGroup(
            issuer: try row.value("issuer"), name: try row.value("name"), users: try row.value("users"),
            updatedAt: try row.date("updated_at"), updatedVia: try row.value("updated_via"))
    }
}
