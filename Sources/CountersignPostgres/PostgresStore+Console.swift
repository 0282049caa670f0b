public import CountersignCore
import CountersignStore
import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    public func addOperator(_ added: Operator, audit record: AuditRecord) async throws {
        let logger = logger
        try await readCommittedWrite { db in
            let inserted = try await db.run(
                """
                INSERT INTO operators (name, added_at) VALUES (\(added.name), \(added.addedAt.seconds))
                ON CONFLICT (name) DO NOTHING RETURNING 1
                """, logger: logger)
            guard inserted == 1 else { throw StoreError(.alreadyExists, "\(added.name) is an operator already") }
            _ = try await Self.insert(record, in: db, logger: logger)
        }
    }

    public func removeOperator(named name: String, audit record: AuditRecord) async throws {
        let logger = logger
        try await readCommittedWrite { db in
            let removed = try await db.run("DELETE FROM operators WHERE name = \(name) RETURNING 1", logger: logger)
            guard removed == 1 else { throw StoreError(.notFound, "\(name) is no operator") }
            _ = try await Self.insert(record, in: db, logger: logger)
        }
    }

    public func operators() async throws -> [Operator] {
        let logger = logger
        return try await read { db in
            try await db.rows("SELECT * FROM operators ORDER BY name", logger: logger).map {
                Operator(name: try $0.value("name"), addedAt: try $0.date("added_at"))
            }
        }
    }

    @discardableResult
    public func appendAudit(_ record: AuditRecord) async throws -> AuditRecord {
        let logger = logger
        return try await readCommittedWrite { db in try await Self.insert(record, in: db, logger: logger) }
    }

    public func auditRecords(after: Int64?, limit: Int) async throws -> [AuditRecord] {
        let logger = logger
        return try await read { db in
            try await db.rows(
                "SELECT * FROM audit_log WHERE id > \(after ?? 0) ORDER BY id LIMIT \(limit)", logger: logger
            ).map { row in
                AuditRecord(
                    id: try row.value("id"), at: try row.date("at"), actor: try row.value("actor"),
                    action: AuditRecord.Action(rawValue: try row.value("action")) ?? .signedIn,
                    target: try row.value("target"), ip: try row.value("ip"))
            }
        }
    }

    static func insert(_ record: AuditRecord, in db: PostgresSession, logger: Logger) async throws -> AuditRecord {
        let row = try await db.row(
            """
            INSERT INTO audit_log (at, actor, action, target, ip)
            VALUES (\(record.at.seconds), \(record.actor), \(record.action.rawValue), \(record.target), \(record.ip))
            RETURNING id
            """, logger: logger)
        var stored = record
        stored.id = try row?.value("id", as: Int64.self)
        return stored
    }
}
