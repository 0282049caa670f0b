public import CountersignCore
import CountersignStore
import Foundation
import PostgresNIO

extension PostgresStore {
    public func quorumPolicies(issuer: String) async throws -> [QuorumPolicy] {
        let logger = logger
        return try await read { db in
            try await db.rows(
                "SELECT * FROM quorum_policies WHERE issuer = \(issuer) ORDER BY event COLLATE \"C\"", logger: logger
            ).map(Self.quorumPolicy(row:))
        }
    }

    public func quorumPolicy(issuer: String, event: String) async throws -> QuorumPolicy? {
        let logger = logger
        return try await read { db in
            try await db.row(
                "SELECT * FROM quorum_policies WHERE issuer = \(issuer) AND event = \(event)", logger: logger
            ).map(Self.quorumPolicy(row:))
        }
    }

    @discardableResult
    public func putQuorumPolicy(_ policy: QuorumPolicy) async throws -> Bool {
        let rows = try await writeStatement(
            """
            INSERT INTO quorum_policies (issuer, event, users, approver_group, required_approvals, allow_requester,
                updated_at, updated_via)
            SELECT id, \(policy.event), \(policy.users), \(policy.group), \(policy.requiredApprovals),
                \(policy.allowRequester), \(policy.updatedAt.seconds), \(policy.updatedVia)
            FROM api_keys WHERE id = \(policy.issuer) AND revoked_at IS NULL
            ON CONFLICT (issuer, event) DO UPDATE
            SET users = excluded.users, approver_group = excluded.approver_group,
                required_approvals = excluded.required_approvals, allow_requester = excluded.allow_requester,
                updated_at = excluded.updated_at, updated_via = excluded.updated_via
            RETURNING (xmax = 0) AS created
            """)
        guard let row = rows.first else { throw StoreError(.notFound, "no such API key") }
        return try row.value("created", as: Bool.self)
    }

    public func deleteQuorumPolicy(issuer: String, event: String) async throws {
        let rows = try await writeStatement(
            "DELETE FROM quorum_policies WHERE issuer = \(issuer) AND event = \(event) RETURNING 1")
        guard !rows.isEmpty else { throw StoreError(.notFound, "no quorum policy for \(event)") }
    }

    private static func quorumPolicy(row: PostgresRandomAccessRow) throws -> QuorumPolicy {
        QuorumPolicy(
            issuer: try row.value("issuer"), event: try row.value("event"), users: try row.value("users"),
            group: try row.value("approver_group"),
            requiredApprovals: Int(try row.value("required_approvals", as: Int32.self)),
            allowRequester: try row.value("allow_requester"), updatedAt: try row.date("updated_at"),
            updatedVia: try row.value("updated_via"))
    }
}
