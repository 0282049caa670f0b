public import CountersignCore
import CountersignStore
import Foundation
import GRDB

extension SQLiteStore {
    public func approverGroups(issuer: String) async throws -> [ApproverGroup] {
        try read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM approver_groups WHERE issuer = ? ORDER BY name", arguments: [issuer]
            ).map(Self.approverGroup(row:))
        }
    }

    public func approverGroup(issuer: String, name: String) async throws -> ApproverGroup? {
        try read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM approver_groups WHERE issuer = ? AND name = ?", arguments: [issuer, name]
            ).map(Self.approverGroup(row:))
        }
    }

    @discardableResult
    public func putApproverGroup(_ group: ApproverGroup) async throws -> Bool {
        try await write { db in
            try Self.requireUnrevokedKey(group.issuer, in: db)
            let existed =
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM approver_groups WHERE issuer = ? AND name = ?",
                    arguments: [group.issuer, group.name]) != nil
            try db.execute(
                sql: """
                    INSERT INTO approver_groups (issuer, name, users, updated_at, updated_via) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (issuer, name) DO UPDATE
                    SET users = excluded.users, updated_at = excluded.updated_at, updated_via = excluded.updated_via
                    """,
                arguments: [
                    group.issuer, group.name, try Self.userList(group.users), group.updatedAt.timeIntervalSince1970,
                    group.updatedVia,
                ])
            return !existed
        }
    }

    public func deleteApproverGroup(issuer: String, name: String) async throws {
        try await write { db in
            try db.execute(
                sql: "DELETE FROM approver_groups WHERE issuer = ? AND name = ?", arguments: [issuer, name])
            guard db.changesCount == 1 else { throw StoreError(.notFound, "no approver group \(name)") }
        }
    }

    /// A group's users as the table keeps them: a JSON list.
    private static func userList(_ users: [String]) throws -> String {
        String(decoding: try JSONEncoder().encode(users), as: UTF8.self)
    }

    private static func approverGroup(row: Row) throws -> ApproverGroup {
        ApproverGroup(
            issuer: row["issuer"], name: row["name"],
            users: try JSONDecoder().decode([String].self, from: Data((row["users"] as String).utf8)),
            updatedAt: Date(timeIntervalSince1970: row["updated_at"]), updatedVia: row["updated_via"])
    }
}
