public import CountersignCore
import CountersignStore
public import Foundation
import GRDB

extension SQLiteStore {
    public func announceExpiredEvents(now: Date, limit: Int) async throws -> Int {
        let condition = """
            status = 'pending' AND expiry_announced = 0 AND withdrawn_at IS NULL AND expires_at <= ?
            """
        // Asked every second: an idle broker answers from a reader.
        let due = try read { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM events WHERE \(condition) LIMIT 1"),
                arguments: [now.timeIntervalSince1970]) != nil
        }
        guard due else { return 0 }
        return try await write { db in
            let events = try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT \(Self.eventColumns) FROM events WHERE \(condition) ORDER BY expires_at LIMIT ?"),
                arguments: [now.timeIntervalSince1970, limit]
            ).map(Self.event(row:))
            for event in events {
                try db.cachedStatement(sql: "UPDATE events SET expiry_announced = 1 WHERE id = ?")
                    .execute(arguments: [event.id])
            }
            try Self.announce(events.map { WebhookNotice.expired($0, now: now) }, into: db)
            for event in events { try Self.pingCIBAClient(of: event, now: now, in: db) }
            return events.count
        }
    }

    public func insertWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws {
        try await write { db in
            try Self.requireUnrevokedKey(endpoint.apiKeyID, in: db)
            try db.execute(
                sql: """
                    INSERT INTO webhook_endpoints (id, api_key_id, url, types, secret, previous_secret, previous_until,
                        created_at, failing_since, disabled_at, disabled_reason)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    endpoint.id, endpoint.apiKeyID, endpoint.url, endpoint.typeList, endpoint.secret.text,
                    endpoint.previousSecret?.text, endpoint.previousUntil?.timeIntervalSince1970,
                    endpoint.createdAt.timeIntervalSince1970, endpoint.failingSince?.timeIntervalSince1970,
                    endpoint.disabledAt?.timeIntervalSince1970, endpoint.disabledReason,
                ])
        }
    }

    public func webhookEndpoint(id: String) async throws -> WebhookEndpoint? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM webhook_endpoints WHERE id = ?", arguments: [id])
                .map(Self.webhookEndpoint(row:))
        }
    }

    public func webhookEndpoints(apiKeyID: String) async throws -> [WebhookEndpoint] {
        try read { db in try Self.webhookEndpoints(apiKeyIDs: [apiKeyID], enabledOnly: false, in: db) }
    }

    public func updateWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE webhook_endpoints SET url = ?, types = ?, secret = ?, previous_secret = ?, previous_until = ?,
                        failing_since = ?, disabled_at = ?, disabled_reason = ?
                    WHERE id = ?
                    """,
                arguments: [
                    endpoint.url, endpoint.typeList, endpoint.secret.text, endpoint.previousSecret?.text,
                    endpoint.previousUntil?.timeIntervalSince1970, endpoint.failingSince?.timeIntervalSince1970,
                    endpoint.disabledAt?.timeIntervalSince1970, endpoint.disabledReason, endpoint.id,
                ])
            guard db.changesCount == 1 else { throw StoreError(.notFound, "no such webhook endpoint") }
        }
    }

    public func deleteWebhookEndpoint(id: String, now: Date) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM webhook_endpoints WHERE id = ?", arguments: [id])
            guard db.changesCount == 1 else { throw StoreError(.notFound, "no such webhook endpoint") }
            try db.execute(
                sql: """
                    UPDATE outbox SET state = 'cancelled', finished_at = ?, last_error = 'the endpoint was deleted',
                        claim = NULL, lease_until = NULL
                    WHERE kind = 'webhook' AND target = ? AND state = 'queued'
                    """,
                arguments: [now.timeIntervalSince1970, id])
        }
    }

    public func recordWebhookAttempt(endpointID: String, delivered: Bool, reason: String, now: Date) async throws
        -> WebhookHealth.Change?
    {
        try await write { db in
            guard
                let endpoint = try Row.fetchOne(
                    db, sql: "SELECT * FROM webhook_endpoints WHERE id = ?", arguments: [endpointID]
                ).map(Self.webhookEndpoint(row:))
            else { return nil }
            let change = WebhookHealth.after(
                delivered: delivered, failingSince: endpoint.failingSince, reason: reason, now: now)
            switch change {
            case .healthy:
                try db.execute(
                    sql: "UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ?", arguments: [endpointID])
            case .failing(let since):
                try db.execute(
                    sql: "UPDATE webhook_endpoints SET failing_since = ? WHERE id = ?",
                    arguments: [since.timeIntervalSince1970, endpointID])
            case .disabled(let why):
                try db.execute(
                    sql: """
                        UPDATE webhook_endpoints SET disabled_at = coalesce(disabled_at, ?),
                            disabled_reason = coalesce(disabled_reason, ?)
                        WHERE id = ?
                        """,
                    arguments: [now.timeIntervalSince1970, why, endpointID])
            }
            return change
        }
    }

    public func resendOutboxMessage(id: String, now: Date) async throws -> OutboxMessage {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE outbox SET state = 'queued', next_attempt_at = ?, deliver_until = ?, finished_at = NULL,
                        claim = NULL, lease_until = NULL
                    WHERE id = ? AND state = 'failed'
                    """,
                arguments: [
                    now.timeIntervalSince1970, (now + WebhookNotice.deliveryTime).timeIntervalSince1970, id,
                ])
            let changed = db.changesCount == 1
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM outbox WHERE id = ?", arguments: [id]) else {
                throw StoreError(.notFound, "no such outbox message")
            }
            guard changed else { throw StoreError(.conflict, "only a failed message can be sent again") }
            return try Self.outboxMessage(row: row)
        }
    }

    public func outboxMessage(id: String) async throws -> OutboxMessage? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM outbox WHERE id = ?", arguments: [id]).map(
                Self.outboxMessage(row:))
        }
    }

    public func outboxMessages(
        targets: [String], state: OutboxMessage.State?, before: PageCursor?, limit: Int
    ) async throws -> [OutboxMessage] {
        guard !targets.isEmpty else { return [] }
        // Past the cursor: created before it, or at its time with a smaller id.
        let t = before?.createdAt.timeIntervalSince1970
        return try read { db in
            try Row.fetchAll(
                db,
                // A state written out lets the planner take its partial
                // index (`outbox_failed`).
                sql: """
                    SELECT * FROM outbox
                    WHERE target IN (\(databaseQuestionMarks(count: targets.count)))
                        \(state.map { "AND state = '\($0.rawValue)'" } ?? "")
                        AND (? IS NULL OR created_at < ? OR (created_at = ? AND id < ?))
                    ORDER BY created_at DESC, id DESC LIMIT ?
                    """,
                arguments: StatementArguments(targets) + [t, t, t, before?.id, limit]
            ).map(Self.outboxMessage(row:))
        }
    }

    public func outboxMessageCount(targets: [String]?, state: OutboxMessage.State, cap: Int) async throws -> Int {
        if targets?.isEmpty == true { return 0 }
        let toTargets = targets.map { "target IN (\(databaseQuestionMarks(count: $0.count))) AND " } ?? ""
        // The state written out, not bound, so that the planner takes the
        // partial index of that state (`outbox_due`, `outbox_failed`): 0.01
        // ms for a thousand failed messages, where a scan took 42 ms.
        return try read { db in
            try Int.fetchOne(
                db,
                sql:
                    "SELECT COUNT(*) FROM (SELECT 1 FROM outbox WHERE \(toTargets)state = '\(state.rawValue)' LIMIT ?)",
                arguments: StatementArguments(targets ?? []) + [cap]) ?? 0
        }
    }

    /// Writes `notices` to the outbox in the transaction of the change they
    /// report: a message per enabled endpoint of their app that wants them.
    static func announce(_ notices: [WebhookNotice], into db: Database) throws {
        guard !notices.isEmpty else { return }
        let endpoints = try webhookEndpoints(
            apiKeyIDs: Array(Set(notices.map(\.apiKeyID))), enabledOnly: true, in: db)
        guard !endpoints.isEmpty else { return }
        try insert(notices.flatMap { $0.messages(to: endpoints) }, into: db)
    }

    static func announce(_ notice: WebhookNotice?, into db: Database) throws {
        if let notice { try announce([notice], into: db) }
    }

    private static func webhookEndpoints(apiKeyIDs: [String], enabledOnly: Bool, in db: Database) throws
        -> [WebhookEndpoint]
    {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT * FROM webhook_endpoints
                    WHERE api_key_id IN (\(databaseQuestionMarks(count: apiKeyIDs.count)))
                      AND (? = 0 OR disabled_at IS NULL)
                    ORDER BY created_at, id
                    """),
            arguments: StatementArguments(apiKeyIDs) + [enabledOnly]
        ).map(webhookEndpoint(row:))
    }

    static func webhookEndpoint(row: Row) throws -> WebhookEndpoint {
        guard let secret = WebhookSecret(row["secret"] as String), let types = WebhookEndpoint.types(from: row["types"])
        else { throw StoreError(.backend, "unreadable webhook endpoint row") }
        return WebhookEndpoint(
            id: row["id"], apiKeyID: row["api_key_id"], url: row["url"], types: types, secret: secret,
            previousSecret: (row["previous_secret"] as String?).flatMap(WebhookSecret.init),
            previousUntil: (row["previous_until"] as Double?).map(Date.init(timeIntervalSince1970:)),
            createdAt: Date(timeIntervalSince1970: row["created_at"]),
            failingSince: (row["failing_since"] as Double?).map(Date.init(timeIntervalSince1970:)),
            disabledAt: (row["disabled_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
            disabledReason: row["disabled_reason"])
    }
}
