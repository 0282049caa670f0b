public import CountersignCore
import CountersignStore
public import Foundation
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
            // Signed out everywhere, at the removal's time. A sign-in that
            // held the operator's row (FOR SHARE) committed before the
            // DELETE went on, and this statement's snapshot sees its session.
            try await db.run(
                """
                UPDATE console_sessions SET ended_at = \(record.at.seconds)
                WHERE operator = \(name) AND ended_at IS NULL
                """, logger: logger)
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
            ).map(AuditRecord.init(row:))
        }
    }

    public func auditRecords(_ query: AuditQuery, before: Int64?, limit: Int) async throws -> [AuditRecord] {
        if query.findsNothing { return [] }
        let logger = logger
        var filters = PostgresFilters()
        filters.add("id < \(filters.bind(before ?? Int64.max))")
        if let actor = query.actor { filters.add("actor = \(filters.bind(actor))") }
        if let action = query.action { filters.add("action = \(filters.bind(action.rawValue))") }
        if let target = query.target { filters.add("target = \(filters.bind(target))") }
        if let from = query.from { filters.add("at >= \(filters.bind(from.seconds))") }
        if let to = query.to { filters.add("at < \(filters.bind(to.seconds))") }
        let limit = filters.bind(limit)
        let statement = filters.select("*", from: "audit_log", then: "ORDER BY id DESC LIMIT \(limit)")
        return try await read { db in try await db.rows(statement, logger: logger).map(AuditRecord.init(row:)) }
    }

    public func startConsoleSession(_ session: ConsoleSession, audit record: AuditRecord) async throws {
        let logger = logger
        try await readCommittedWrite { db in
            // Holds the operator's row to the commit: a removal waits for
            // this sign-in, then ends its session; a sign-in that waited for
            // a removal finds no row.
            let isOperator = try await db.run(
                "SELECT 1 FROM operators WHERE name = \(session.operatorName) FOR SHARE", logger: logger)
            guard isOperator == 1 else { throw StoreError(.notFound, "\(session.operatorName) is no operator") }
            // A clash of digests (never, for random secrets) is a unique
            // violation, which is alreadyExists too.
            let inserted = try await db.run(
                """
                INSERT INTO console_sessions (digest, operator, event_id, ip, created_at, expires_at, ended_at)
                VALUES (\(session.digest), \(session.operatorName), \(session.eventID), \(session.ip),
                    \(session.createdAt.seconds), \(session.expiresAt.seconds), \(session.endedAt?.seconds))
                ON CONFLICT (event_id) DO NOTHING RETURNING 1
                """, logger: logger)
            guard inserted == 1 else {
                throw StoreError(.alreadyExists, "event \(session.eventID) started a console session already")
            }
            _ = try await Self.insert(record, in: db, logger: logger)
        }
    }

    public func consoleSession(digest: Data) async throws -> ConsoleSession? {
        let logger = logger
        return try await read { db in
            guard let row = try await db.row("SELECT * FROM console_sessions WHERE digest = \(digest)", logger: logger)
            else { return nil }
            return ConsoleSession(
                digest: try row.value("digest"), operatorName: try row.value("operator"),
                eventID: try row.value("event_id"), ip: try row.value("ip"), createdAt: try row.date("created_at"),
                expiresAt: try row.date("expires_at"), endedAt: try row.optionalDate("ended_at"))
        }
    }

    public func endConsoleSession(digest: Data, now: Date, audit record: AuditRecord) async throws -> Bool {
        let logger = logger
        return try await readCommittedWrite { db in
            let ended = try await db.run(
                """
                UPDATE console_sessions SET ended_at = \(now.seconds)
                WHERE digest = \(digest) AND ended_at IS NULL RETURNING 1
                """, logger: logger)
            guard ended == 1 else { return false }
            _ = try await Self.insert(record, in: db, logger: logger)
            return true
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

extension AuditRecord {
    fileprivate init(row: PostgresRandomAccessRow) throws {
        self.init(
            id: try row.value("id"), at: try row.date("at"), actor: try row.value("actor"),
            action: AuditRecord.Action(rawValue: try row.value("action")) ?? .signedIn,
            target: try row.value("target"), ip: try row.value("ip"))
    }
}
