public import CountersignCore
import CountersignStore
import Foundation
import GRDB

extension SQLiteStore {
    public func quorumPolicies(issuer: String) async throws -> [QuorumPolicy] {
        try read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM quorum_policies WHERE issuer = ? ORDER BY event", arguments: [issuer]
            ).map(Self.quorumPolicy(row:))
        }
    }

    public func quorumPolicy(issuer: String, event: String) async throws -> QuorumPolicy? {
        try read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM quorum_policies WHERE issuer = ? AND event = ?", arguments: [issuer, event]
            ).map(Self.quorumPolicy(row:))
        }
    }

    @discardableResult
    public func putQuorumPolicy(_ policy: QuorumPolicy) async throws -> Bool {
        try await write { db in
            try Self.requireUnrevokedKey(policy.issuer, in: db)
            let existed =
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM quorum_policies WHERE issuer = ? AND event = ?",
                    arguments: [policy.issuer, policy.event]) != nil
            try db.execute(
                sql: """
                    INSERT INTO quorum_policies (issuer, event, users, approver_group, required_approvals,
                        allow_requester, updated_at, updated_via)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (issuer, event) DO UPDATE
                    SET users = excluded.users, approver_group = excluded.approver_group,
                        required_approvals = excluded.required_approvals, allow_requester = excluded.allow_requester,
                        updated_at = excluded.updated_at, updated_via = excluded.updated_via
                    """,
                arguments: [
                    policy.issuer, policy.event,
                    try policy.users.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) },
                    policy.group, policy.requiredApprovals, policy.allowRequester,
                    policy.updatedAt.timeIntervalSince1970, policy.updatedVia,
                ])
            return !existed
        }
    }

    public func deleteQuorumPolicy(issuer: String, event: String) async throws {
        try await write { db in
            try db.execute(
                sql: "DELETE FROM quorum_policies WHERE issuer = ? AND event = ?", arguments: [issuer, event])
            guard db.changesCount == 1 else { throw StoreError(.notFound, "no quorum policy for \(event)") }
        }
    }

    private static func quorumPolicy(row: Row) throws -> QuorumPolicy {
        QuorumPolicy(
            issuer: row["issuer"], event: row["event"],
            users: try (row["users"] as String?).map { try JSONDecoder().decode([String].self, from: Data($0.utf8)) },
            group: row["approver_group"], requiredApprovals: row["required_approvals"],
            allowRequester: row["allow_requester"], updatedAt: Date(timeIntervalSince1970: row["updated_at"]),
            updatedVia: row["updated_via"])
    }
}
