public import CountersignCore
import CountersignStore
public import Foundation
import PostgresNIO

extension PostgresStore {
    public func announceExpiredEvents(now: Date, limit: Int) async throws -> Int {
        let logger = logger
        // Asked every second: when nothing is due, one read and no transaction.
        let due = try await read { db in
            try await db.row(
                """
                SELECT 1 FROM events
                WHERE status = 'pending' AND NOT expiry_announced AND withdrawn_at IS NULL
                  AND expires_at <= \(now.seconds)
                LIMIT 1
                """, logger: logger) != nil
        }
        guard due else { return 0 }
        return try await readCommittedWrite { db in
            // Rows another instance is announcing are skipped, not waited for.
            let events = try await db.rows(
                """
                UPDATE events SET expiry_announced = true
                WHERE id IN (
                    SELECT id FROM events
                    WHERE status = 'pending' AND NOT expiry_announced AND withdrawn_at IS NULL
                      AND expires_at <= \(now.seconds)
                    ORDER BY expires_at LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED)
                RETURNING *
                """, logger: logger
            ).map(Self.event(row:))
            try await Self.announce(events.map { WebhookNotice.expired($0, now: now) }, into: db, logger: logger)
            for event in events {
                try await Self.pingCIBAClient(of: event, now: now, in: db, logger: logger)
            }
            return events.count
        }
    }

    public func insertWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws {
        let rows = try await writeStatement(
            """
            INSERT INTO webhook_endpoints (id, api_key_id, url, types, secret, previous_secret, previous_until,
                created_at, failing_since, disabled_at, disabled_reason)
            SELECT \(endpoint.id), id, \(endpoint.url), \(endpoint.typeList), \(endpoint.secret.text),
                \(endpoint.previousSecret?.text), \(endpoint.previousUntil?.seconds), \(endpoint.createdAt.seconds),
                \(endpoint.failingSince?.seconds), \(endpoint.disabledAt?.seconds), \(endpoint.disabledReason)
            FROM api_keys WHERE id = \(endpoint.apiKeyID) AND revoked_at IS NULL
            RETURNING 1
            """)
        guard !rows.isEmpty else { throw StoreError(.notFound, "no such API key") }
    }

    public func webhookEndpoint(id: String) async throws -> WebhookEndpoint? {
        let logger = logger
        return try await read { db in
            try await db.row("SELECT * FROM webhook_endpoints WHERE id = \(id)", logger: logger)
                .map(Self.webhookEndpoint(row:))
        }
    }

    public func webhookEndpoints(apiKeyID: String) async throws -> [WebhookEndpoint] {
        let logger = logger
        return try await read { db in
            try await db.rows(
                "SELECT * FROM webhook_endpoints WHERE api_key_id = \(apiKeyID) ORDER BY created_at, id",
                logger: logger
            ).map(Self.webhookEndpoint(row:))
        }
    }

    public func updateWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws {
        let rows = try await writeStatement(
            """
            UPDATE webhook_endpoints SET url = \(endpoint.url), types = \(endpoint.typeList),
                secret = \(endpoint.secret.text), previous_secret = \(endpoint.previousSecret?.text),
                previous_until = \(endpoint.previousUntil?.seconds), failing_since = \(endpoint.failingSince?.seconds),
                disabled_at = \(endpoint.disabledAt?.seconds), disabled_reason = \(endpoint.disabledReason)
            WHERE id = \(endpoint.id)
            RETURNING 1
            """)
        guard !rows.isEmpty else { throw StoreError(.notFound, "no such webhook endpoint") }
    }

    public func deleteWebhookEndpoint(id: String, now: Date) async throws {
        let logger = logger
        try await readCommittedWrite { db in
            let deleted = try await db.run("DELETE FROM webhook_endpoints WHERE id = \(id) RETURNING 1", logger: logger)
            guard deleted == 1 else { throw StoreError(.notFound, "no such webhook endpoint") }
            try await db.run(
                """
                UPDATE outbox SET state = 'cancelled', finished_at = \(now.seconds),
                    last_error = 'the endpoint was deleted', claim = NULL, lease_until = NULL
                WHERE kind = 'webhook' AND target = \(id) AND state = 'queued'
                """, logger: logger)
        }
    }

    public func recordWebhookAttempt(endpointID: String, delivered: Bool, reason: String, now: Date) async throws
        -> WebhookHealth.Change?
    {
        let logger = logger
        return try await readCommittedWrite { db in
            // The row lock orders this instance's attempts with another's.
            guard
                let endpoint = try await db.row(
                    "SELECT * FROM webhook_endpoints WHERE id = \(endpointID) FOR UPDATE", logger: logger
                ).map(Self.webhookEndpoint(row:))
            else { return nil }
            let change = WebhookHealth.after(
                delivered: delivered, failingSince: endpoint.failingSince, reason: reason, now: now)
            switch change {
            case .healthy:
                try await db.run(
                    "UPDATE webhook_endpoints SET failing_since = NULL WHERE id = \(endpointID)", logger: logger)
            case .failing(let since):
                try await db.run(
                    "UPDATE webhook_endpoints SET failing_since = \(since.seconds) WHERE id = \(endpointID)",
                    logger: logger)
            case .disabled(let why):
                try await db.run(
                    """
                    UPDATE webhook_endpoints SET disabled_at = coalesce(disabled_at, \(now.seconds)),
                        disabled_reason = coalesce(disabled_reason, \(why))
                    WHERE id = \(endpointID)
                    """, logger: logger)
            }
            return change
        }
    }

    public func resendOutboxMessage(id: String, now: Date) async throws -> OutboxMessage {
        let logger = logger
        return try await readCommittedWrite { db in
            let row = try await db.row(
                """
                UPDATE outbox SET state = 'queued', next_attempt_at = \(now.seconds),
                    deliver_until = \((now + WebhookNotice.deliveryTime).seconds), finished_at = NULL,
                    claim = NULL, lease_until = NULL
                WHERE id = \(id) AND state = 'failed'
                RETURNING *
                """, logger: logger)
            if let row { return try Self.outboxMessage(row: row) }
            let known = try await db.row("SELECT 1 FROM outbox WHERE id = \(id)", logger: logger) != nil
            throw known
                ? StoreError(.conflict, "only a failed message can be sent again")
                : StoreError(.notFound, "no such outbox message")
        }
    }

    public func outboxMessage(id: String) async throws -> OutboxMessage? {
        let logger = logger
        return try await read { db in
            try await db.row("SELECT * FROM outbox WHERE id = \(id)", logger: logger).map(Self.outboxMessage(row:))
        }
    }

    public func outboxMessages(
        targets: [String], state: OutboxMessage.State?, before: PageCursor?, limit: Int
    ) async throws -> [OutboxMessage] {
        guard !targets.isEmpty else { return [] }
        let logger = logger
        // Past the cursor: created before it, or at its time with a smaller
        // id (in byte order, as SQLite compares them).
        let t = before?.createdAt.timeIntervalSince1970
        return try await read { db in
            try await db.rows(
                """
                SELECT * FROM outbox
                WHERE target = ANY(\(targets)) AND (\(state?.rawValue)::text IS NULL OR state = \(state?.rawValue))
                    AND (\(t)::double precision IS NULL OR created_at < \(t)
                        OR (created_at = \(t) AND id COLLATE "C" < \(before?.id)))
                ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT \(limit)
                """, logger: logger
            ).map(Self.outboxMessage(row:))
        }
    }

    public func outboxMessageCount(targets: [String]?, state: OutboxMessage.State, cap: Int) async throws -> Int {
        if targets?.isEmpty == true { return 0 }
        let logger = logger
        return try await read { db in
            let rows = try await db.rows(
                """
                SELECT COUNT(*) AS count FROM (SELECT 1 FROM outbox
                WHERE (\(targets)::text[] IS NULL OR target = ANY(\(targets))) AND state = \(state.rawValue)
                LIMIT \(cap)) AS capped
                """, logger: logger)
            return Int(try rows.first?.value("count", as: Int64.self) ?? 0)
        }
    }

    /// Writes `notices` to the outbox in the transaction of the change they
    /// report: a message per enabled endpoint of their app that wants them.
    static func announce(_ notices: [WebhookNotice], into db: PostgresSession, logger: Logger) async throws {
        guard !notices.isEmpty else { return }
        let keys = Array(Set(notices.map(\.apiKeyID)))
        let endpoints = try await db.rows(
            """
            SELECT * FROM webhook_endpoints WHERE api_key_id = ANY(\(keys)) AND disabled_at IS NULL
            ORDER BY created_at, id
            """, logger: logger
        ).map(webhookEndpoint(row:))
        guard !endpoints.isEmpty else { return }
        try insert(notices.flatMap { $0.messages(to: endpoints) }, into: db, logger: logger)
    }

    static func announce(_ notice: WebhookNotice?, into db: PostgresSession, logger: Logger) async throws {
        if let notice { try await announce([notice], into: db, logger: logger) }
    }

    static func webhookEndpoint(row: PostgresRandomAccessRow) throws -> WebhookEndpoint {
        guard let secret = WebhookSecret(try row.value("secret", as: String.self)),
            let types = WebhookEndpoint.types(from: try row.value("types"))
        else { throw StoreError(.backend, "unreadable webhook endpoint row") }
        return WebhookEndpoint(
            id: try row.value("id"), apiKeyID: try row.value("api_key_id"), url: try row.value("url"), types: types,
            secret: secret,
            previousSecret: try row.value("previous_secret", as: String?.self).flatMap(WebhookSecret.init),
            previousUntil: try row.optionalDate("previous_until"), createdAt: try row.date("created_at"),
            failingSince: try row.optionalDate("failing_since"), disabledAt: try row.optionalDate("disabled_at"),
            disabledReason: try row.value("disabled_reason"))
    }
}
