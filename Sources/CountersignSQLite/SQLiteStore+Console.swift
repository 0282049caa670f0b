public import CountersignCore
import CountersignStore
public import Foundation
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
            // Signed out everywhere, at the removal's time.
            try db.execute(
                sql: "UPDATE console_sessions SET ended_at = ? WHERE operator = ? AND ended_at IS NULL",
                arguments: [record.at.timeIntervalSince1970, name])
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
            ).map(AuditRecord.init(row:))
        }
    }

    public func auditRecords(_ query: AuditQuery, before: Int64?, limit: Int) async throws -> [AuditRecord] {
        if query.findsNothing { return [] }
        var conditions = ["id < ?"]
        var arguments: StatementArguments = [before ?? Int64.max]
        if let actor = query.actor {
            conditions.append("actor = ?")
            arguments += [actor]
        }
        if let action = query.action {
            conditions.append("action = ?")
            arguments += [action.rawValue]
        }
        if let target = query.target {
            conditions.append("target = ?")
            arguments += [target]
        }
        if let from = query.from {
            conditions.append("at >= ?")
            arguments += [from.timeIntervalSince1970]
        }
        if let to = query.to {
            conditions.append("at < ?")
            arguments += [to.timeIntervalSince1970]
        }
        arguments += [limit]
        let sql =
            "SELECT * FROM audit_log WHERE " + conditions.joined(separator: " AND ") + " ORDER BY id DESC LIMIT ?"
        return try read { db in try Row.fetchAll(db, sql: sql, arguments: arguments).map(AuditRecord.init(row:)) }
    }

    public func startConsoleSession(_ session: ConsoleSession, audit record: AuditRecord) async throws {
        try await write { db in
            // Checked in the write, which SQLite runs alone: no removal of
            // the operator comes between the check and the insert.
            guard
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM operators WHERE name = ?)",
                    arguments: [session.operatorName]) == true
            else { throw StoreError(.notFound, "\(session.operatorName) is no operator") }
            // A clash of digests (never, for random secrets) is a constraint
            // error, which is alreadyExists too.
            try db.execute(
                sql: """
                    INSERT INTO console_sessions (digest, operator, event_id, ip, created_at, expires_at, ended_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING
                    """,
                arguments: [
                    session.digest, session.operatorName, session.eventID, session.ip,
                    session.createdAt.timeIntervalSince1970, session.expiresAt.timeIntervalSince1970,
                    session.endedAt?.timeIntervalSince1970,
                ])
            guard db.changesCount == 1 else {
                throw StoreError(.alreadyExists, "event \(session.eventID) started a console session already")
            }
            try Self.insert(record, in: db)
        }
    }

    public func consoleSession(digest: Data) async throws -> ConsoleSession? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM console_sessions WHERE digest = ?", arguments: [digest]).map {
                ConsoleSession(
                    digest: $0["digest"], operatorName: $0["operator"], eventID: $0["event_id"], ip: $0["ip"],
                    createdAt: Date(timeIntervalSince1970: $0["created_at"]),
                    expiresAt: Date(timeIntervalSince1970: $0["expires_at"]),
                    endedAt: ($0["ended_at"] as Double?).map(Date.init(timeIntervalSince1970:)))
            }
        }
    }

    public func endConsoleSession(digest: Data, now: Date, audit record: AuditRecord) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "UPDATE console_sessions SET ended_at = ? WHERE digest = ? AND ended_at IS NULL",
                arguments: [now.timeIntervalSince1970, digest])
            guard db.changesCount == 1 else { return false }
            try Self.insert(record, in: db)
            return true
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

extension AuditRecord {
    fileprivate init(row: Row) {
        self.init(
            id: row["id"], at: Date(timeIntervalSince1970: row["at"]), actor: row["actor"],
            action: AuditRecord.Action(rawValue: row["action"]) ?? .signedIn, target: row["target"], ip: row["ip"])
    }
}
