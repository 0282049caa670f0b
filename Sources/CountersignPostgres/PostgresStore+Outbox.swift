public import CountersignCore
public import CountersignStore
public import Foundation
import PostgresNIO

extension PostgresStore {
    public func vapidKeys() async throws -> [BrokerSigningKey] {
        let logger = logger
        return try await read { db in
            try await db.rows("SELECT * FROM vapid_keys ORDER BY created_at, id", logger: logger).map {
                BrokerSigningKey(
                    id: try $0.value("id"), privateKeyPEM: try $0.value("private_key_pem"),
                    createdAt: try $0.date("created_at"))
            }
        }
    }

    public func insertVAPIDKey(_ key: BrokerSigningKey) async throws {
        try await writeStatement(
            """
            INSERT INTO vapid_keys (id, private_key_pem, created_at)
            VALUES (\(key.id), \(key.privateKeyPEM), \(key.createdAt.seconds))
            """)
    }

    public func retireVAPIDKey(id: String) async throws -> Int {
        let logger = logger
        return try await write { db in
            let ids = try await db.rows("SELECT id FROM vapid_keys ORDER BY created_at, id", logger: logger).map {
                try $0.value("id", as: String.self)
            }
            guard ids.contains(id) else { throw StoreError(.notFound, "no such VAPID key") }
            guard ids.last != id else { throw StoreError(.conflict, "the newest VAPID key cannot be retired") }
            let removed = try await db.run(
                """
                UPDATE devices SET push_endpoint = NULL, push_p256dh = NULL, push_auth = NULL, push_vapid_key = NULL,
                    push_updated_at = NULL
                WHERE push_vapid_key = \(id)
                RETURNING 1
                """, logger: logger)
            try await db.run("DELETE FROM vapid_keys WHERE id = \(id)", logger: logger)
            return removed
        }
    }

    public func setPushSubscription(_ subscription: PushSubscription?, deviceID: String) async throws {
        let logger = logger
        try await readCommittedWrite { db in
            let changed = try await db.run(
                """
                UPDATE devices SET push_endpoint = \(subscription?.endpoint), push_p256dh = \(subscription?.p256dh),
                    push_auth = \(subscription?.auth), push_vapid_key = \(subscription?.vapidKeyID),
                    push_updated_at = \(subscription?.updatedAt.seconds)
                WHERE id = \(deviceID) AND revoked_at IS NULL
                RETURNING 1
                """, logger: logger)
            guard changed == 0 else { return }
            throw try await Self.unwritable(deviceID, in: db, logger: logger)
        }
    }

    public func removePushSubscription(deviceID: String, endpoint: String) async throws -> Bool {
        try await !writeStatement(
            """
            UPDATE devices SET push_endpoint = NULL, push_p256dh = NULL, push_auth = NULL, push_vapid_key = NULL,
                push_updated_at = NULL
            WHERE id = \(deviceID) AND push_endpoint = \(endpoint)
            RETURNING 1
            """
        ).isEmpty
    }

    static func insert(_ messages: [OutboxMessage], into db: PostgresSession, logger: Logger) throws {
        for message in messages {
            try db.send(
                """
                INSERT INTO outbox (id, kind, target, receiver, event_id, payload, created_at, deliver_until,
                    next_attempt_at, attempts, state, last_error, finished_at)
                VALUES (\(message.id), \(message.kind.rawValue), \(message.target), \(message.receiver),
                    \(message.eventID),
                    \(message.payload), \(message.createdAt.seconds), \(message.deliverUntil.seconds),
                    \(message.nextAttemptAt.seconds), \(message.attempts), \(message.state.rawValue),
                    \(message.lastError), \(message.finishedAt?.seconds))
                """, logger: logger)
        }
    }

    public func claimOutboxMessages(
        limit: Int, lease: TimeInterval, claim: String, now: Date, share: OutboxShare
    ) async throws -> [ClaimedOutboxMessage] {
        let leaseUntil = now + lease
        // One statement. The innermost select locks the longest due of
        // receivers below their share (the caller's attempts in flight,
        // `busy`), a bounded number of candidates, skipping the rows another
        // instance is claiming at this moment rather than waiting for them,
        // so that rows further on take their place. The select around it
        // keeps each receiver's oldest up to its share (a window function
        // cannot be in a select that locks), and the lease keeps the claimed
        // rows from everyone else until the attempt is recorded. A row
        // queued before receivers were kept shares by its kind and target
        // (`OutboxMessage.receiver(kind:target:)`).
        let rows = try await writeStatement(
            """
            UPDATE outbox SET claim = \(claim), lease_until = \(leaseUntil.seconds)
            WHERE id IN (
                SELECT id FROM (
                    SELECT candidates.id, candidates.next_attempt_at, coalesce(busy.n, 0)
                        + row_number() OVER (
                            PARTITION BY candidates.share_key ORDER BY next_attempt_at, id)
                        AS share_rank
                    FROM (
                        SELECT id, coalesce(receiver, kind || ':' || target) AS share_key, next_attempt_at
                        FROM outbox
                        WHERE state = 'queued' AND next_attempt_at <= \(now.seconds)
                          AND (lease_until IS NULL OR lease_until <= \(now.seconds))
                          AND NOT EXISTS (
                              SELECT 1 FROM jsonb_to_recordset(\(share.inFlightJSON)::jsonb)
                                  AS full_share (receiver text, n int)
                              WHERE full_share.receiver = coalesce(outbox.receiver, outbox.kind || ':' || outbox.target)
                                AND full_share.n >= \(share.perReceiver))
                        ORDER BY next_attempt_at, id LIMIT \(share.candidates(limit: limit))
                        FOR NO KEY UPDATE SKIP LOCKED
                    ) AS candidates
                    LEFT JOIN jsonb_to_recordset(\(share.inFlightJSON)::jsonb) AS busy (receiver text, n int)
                        ON busy.receiver = candidates.share_key
                ) AS ranked
                WHERE share_rank <= \(share.perReceiver)
                ORDER BY next_attempt_at, id LIMIT \(limit))
            RETURNING *
            """)
        return try rows.map {
            ClaimedOutboxMessage(
                message: try Self.outboxMessage(row: $0), claim: try $0.value("claim"), leaseUntil: leaseUntil)
        }
        .sorted { ($0.message.nextAttemptAt, $0.message.id) < ($1.message.nextAttemptAt, $1.message.id) }
    }

    public func finishOutboxAttempt(id: String, claim: String, outcome: OutboxOutcome, now: Date) async throws {
        let change = OutboxChange(outcome, now: now)
        let logger = logger
        try await readCommittedWrite { db in
            let changed = try await db.run(
                """
                UPDATE outbox SET attempts = attempts + 1, state = \(change.state.rawValue),
                    next_attempt_at = coalesce(\(change.nextAttemptAt?.seconds), next_attempt_at),
                    last_error = coalesce(\(change.error), last_error), finished_at = \(change.finishedAt?.seconds),
                    claim = NULL, lease_until = NULL,
                    payload = CASE WHEN kind = ANY(\(change.wipingKinds)) THEN ''::bytea ELSE payload END
                WHERE id = \(id) AND claim = \(claim) AND state = 'queued'
                RETURNING 1
                """, logger: logger)
            guard changed == 0 else { return }
            let known = try await db.row("SELECT 1 FROM outbox WHERE id = \(id)", logger: logger) != nil
            throw known
                ? StoreError(.conflict, "the message was finished or claimed again since")
                : StoreError(.notFound, "no such outbox message")
        }
    }

    public func outboxMessages(state: OutboxMessage.State?, limit: Int) async throws -> [OutboxMessage] {
        let logger = logger
        return try await read { db in
            try await db.rows(
                """
                SELECT * FROM outbox WHERE \(state?.rawValue)::text IS NULL OR state = \(state?.rawValue)
                ORDER BY created_at DESC, id DESC LIMIT \(limit)
                """, logger: logger
            ).map(Self.outboxMessage(row:))
        }
    }

    static func outboxMessage(row: PostgresRandomAccessRow) throws -> OutboxMessage {
        guard let kind = OutboxMessage.Kind(rawValue: try row.value("kind")),
            let state = OutboxMessage.State(rawValue: try row.value("state"))
        else { throw StoreError(.backend, "unreadable outbox row") }
        return OutboxMessage(
            id: try row.value("id"), kind: kind, target: try row.value("target"),
            receiver: try row.value("receiver", as: String?.self)
                ?? OutboxMessage.receiver(kind: kind, target: try row.value("target")),
            eventID: try row.value("event_id"),
            payload: try row.value("payload"), createdAt: try row.date("created_at"),
            deliverUntil: try row.date("deliver_until"), nextAttemptAt: try row.date("next_attempt_at"),
            attempts: Int(try row.value("attempts", as: Int32.self)), state: state,
            lastError: try row.value("last_error"), finishedAt: try row.optionalDate("finished_at"))
    }
}
