public import CountersignCore
import CountersignStore
import Foundation
import GRDB

extension SQLiteStore {
    public func addOperator(_ added: Operator, audit record: AuditRecord) async throws {
        try await write { db in
            try db.execute(
                sql: "INSERT INTO operators (name, added_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
                arguments: [added.name, added.addedAt.timeIntervalSince1970])
            guard db.changesCount == 1 else { throw StoreError(.alreadyExists, "\(added.name) is an operator already") }
            try Self.insert(record, in: db)
        }
    }

    public func removeOperator(named name: String, audit record: AuditRecord) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM operators WHERE name = ?", arguments: [name])
            guard db.changesCount == 1 else { throw StoreError(.notFound, "\(name) is no operator") }
            try Self.insert(record, in: db)
        }
    }

    public func operators() async throws -> [Operator] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM operators ORDER BY name").map {
                Operator(name: $0["name"], addedAt: Date(timeIntervalSince1970: $0["added_at"]))
            }
        }
    }

    @discardableResult
    public func appendAudit(_ record: AuditRecord) async throws -> AuditRecord {
        try await write { db in try Self.insert(record, in: db) }
    }

    public func auditRecords(after: Int64?, limit: Int) async throws -> [AuditRecord] {
        try read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM audit_log WHERE id > ? ORDER BY id LIMIT ?", arguments: [after ?? 0, limit]
            ).map { row in
                AuditRecord(
                    id: row["id"], at: Date(timeIntervalSince1970: row["at"]), actor: row["actor"],
                    action: AuditRecord.Action(rawValue: row["action"]) ?? .signedIn, target: row["target"],
                    ip: row["ip"])
            }
        }
    }

    @discardableResult
    static func insert(_ record: AuditRecord, in db: Database) throws -> AuditRecord {
        try db.execute(
            sql: "INSERT INTO audit_log (at, actor, action, target, ip) VALUES (?, ?, ?, ?, ?)",
            arguments: [
                record.at.timeIntervalSince1970, record.actor, record.action.rawValue, record.target, record.ip,
            ])
        var stored = record
        stored.id = db.lastInsertedRowID
        return stored
    }
}
