public import CountersignCore
public import CountersignStore
public import Foundation
import GRDB

extension SQLiteStore {
    static let noPush = """
        push_endpoint = NULL, push_p256dh = NULL, push_auth = NULL, push_vapid_key = NULL, push_updated_at = NULL
        """

    public func vapidKeys() async throws -> [BrokerSigningKey] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM vapid_keys ORDER BY created_at, id").map {
                BrokerSigningKey(
                    id: $0["id"], privateKeyPEM: $0["private_key_pem"],
                    createdAt: Date(timeIntervalSince1970: $0["created_at"]))
            }
        }
    }

    public func insertVAPIDKey(_ key: BrokerSigningKey) async throws {
        try await write { db in
            try db.execute(
                sql: "INSERT INTO vapid_keys (id, private_key_pem, created_at) VALUES (?, ?, ?)",
                arguments: [key.id, key.privateKeyPEM, key.createdAt.timeIntervalSince1970])
        }
    }

    public func retireVAPIDKey(id: String) async throws -> Int {
        try await write { db in
            let ids = try String.fetchAll(db, sql: "SELECT id FROM vapid_keys ORDER BY created_at, id")
            guard ids.contains(id) else { throw StoreError(.notFound, "no such VAPID key") }
            guard ids.last != id else { throw StoreError(.conflict, "the newest VAPID key cannot be retired") }
            try db.execute(sql: "UPDATE devices SET \(Self.noPush) WHERE push_vapid_key = ?", arguments: [id])
            let removed = db.changesCount
            try db.execute(sql: "DELETE FROM vapid_keys WHERE id = ?", arguments: [id])
            return removed
        }
    }

    public func setPushSubscription(_ subscription: PushSubscription?, deviceID: String) async throws {
        try await write { db in
            if let subscription {
                try db.execute(
                    sql: """
                        UPDATE devices SET push_endpoint = ?, push_p256dh = ?, push_auth = ?, push_vapid_key = ?,
                            push_updated_at = ?
                        WHERE id = ? AND revoked_at IS NULL
                        """,
                    arguments: [
                        subscription.endpoint, subscription.p256dh, subscription.auth, subscription.vapidKeyID,
                        subscription.updatedAt.timeIntervalSince1970, deviceID,
                    ])
            } else {
                try db.execute(
                    sql: "UPDATE devices SET \(Self.noPush) WHERE id = ? AND revoked_at IS NULL", arguments: [deviceID])
            }
            guard db.changesCount == 0 else { return }
            throw try Self.unwritable(deviceID, in: db)
        }
    }

    public func removePushSubscription(deviceID: String, endpoint: String) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "UPDATE devices SET \(Self.noPush) WHERE id = ? AND push_endpoint = ?",
                arguments: [deviceID, endpoint])
            return db.changesCount == 1
        }
    }

    static func insert(_ messages: [OutboxMessage], into db: Database) throws {
        for message in messages {
            try db.cachedStatement(
                sql: """
                    INSERT INTO outbox (id, kind, target, receiver, event_id, payload, created_at, deliver_until,
                        next_attempt_at, attempts, state, last_error, finished_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                message.id, message.kind.rawValue, message.target, message.receiver, message.eventID, message.payload,
                message.createdAt.timeIntervalSince1970, message.deliverUntil.timeIntervalSince1970,
                message.nextAttemptAt.timeIntervalSince1970, message.attempts, message.state.rawValue,
                message.lastError, message.finishedAt?.timeIntervalSince1970,
            ])
        }
    }

    public func claimOutboxMessages(
        limit: Int, lease: TimeInterval, claim: String, now: Date, share: OutboxShare
    ) async throws -> [ClaimedOutboxMessage] {
        let arguments: StatementArguments = [
            share.inFlightJSON, now.timeIntervalSince1970, now.timeIntervalSince1970, share.perReceiver,
            share.candidates(limit: limit), share.perReceiver, limit,
        ]
        // The worker asks every second and whenever an attempt ends. A claim
        // that would take nothing (nothing due, or only the backlogs of
        // receivers at their share, which the select passes over row by
        // row: 11–17 ms for 20,000) is answered from a reader, without
        // taking the write lock from the requests' writes.
        let claimable = try await scan { db in
            try Row.fetchOne(db.cachedStatement(sql: Self.claimable), arguments: arguments) != nil
        }
        guard claimable else { return [] }
        return try await write { db in
            // One writer at a time: the select and the update are one step.
            let rows = try Row.fetchAll(db.cachedStatement(sql: Self.claimable), arguments: arguments)
            let leaseUntil = now + lease
            return try rows.map { row in
                try db.cachedStatement(sql: "UPDATE outbox SET claim = ?, lease_until = ? WHERE id = ?")
                    .execute(arguments: [claim, leaseUntil.timeIntervalSince1970, row["id"] as String])
                return ClaimedOutboxMessage(
                    message: try Self.outboxMessage(row: row), claim: claim, leaseUntil: leaseUntil)
            }
        }
    }

    /// The messages a claim takes, the longest due first: of receivers
    /// below their share (the caller's attempts in flight, `busy`, a JSON
    /// parameter), a bounded number of candidates, then each receiver's
    /// oldest up to its share. A row queued before receivers were kept
    /// shares by its kind and target (``OutboxMessage/receiver(kind:target:)``).
    static let claimable = """
        WITH busy (receiver, n) AS (
            SELECT json_extract(value, '$.receiver'), json_extract(value, '$.n') FROM json_each(?)
        ),
        candidates AS (
            SELECT *, coalesce(receiver, kind || ':' || target) AS share_key FROM outbox
            WHERE state = 'queued' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
              AND NOT EXISTS (
                  SELECT 1 FROM busy
                  WHERE busy.receiver = coalesce(outbox.receiver, outbox.kind || ':' || outbox.target) AND busy.n >= ?)
            ORDER BY next_attempt_at, id LIMIT ?
        ),
        ranked AS (
            SELECT candidates.*, coalesce(busy.n, 0)
                + row_number() OVER (PARTITION BY candidates.share_key ORDER BY next_attempt_at, id) AS share_rank
            FROM candidates LEFT JOIN busy ON busy.receiver = candidates.share_key
        )
        SELECT * FROM ranked WHERE share_rank <= ? ORDER BY next_attempt_at, id LIMIT ?
        """

    public func finishOutboxAttempt(id: String, claim: String, outcome: OutboxOutcome, now: Date) async throws {
        let change = OutboxChange(outcome, now: now)
        try await write { db in
            try db.cachedStatement(
                sql: """
                    UPDATE outbox SET attempts = attempts + 1, state = ?, next_attempt_at = coalesce(?, next_attempt_at),
                        last_error = coalesce(?, last_error), finished_at = ?, claim = NULL, lease_until = NULL,
                        payload = CASE WHEN kind IN (SELECT value FROM json_each(?)) THEN x'' ELSE payload END
                    WHERE id = ? AND claim = ? AND state = 'queued'
                    """
            ).execute(arguments: [
                change.state.rawValue, change.nextAttemptAt?.timeIntervalSince1970, change.error,
                change.finishedAt?.timeIntervalSince1970, try Self.jsonText(change.wipingKinds), id, claim,
            ])
            guard db.changesCount == 0 else { return }
            let exists = try Bool.fetchOne(db, sql: "SELECT 1 FROM outbox WHERE id = ?", arguments: [id]) != nil
            throw exists
                ? StoreError(.conflict, "the message was finished or claimed again since")
                : StoreError(.notFound, "no such outbox message")
        }
    }

    public func outboxMessages(state: OutboxMessage.State?, limit: Int) async throws -> [OutboxMessage] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM outbox WHERE ? IS NULL OR state = ? ORDER BY created_at DESC, id DESC LIMIT ?",
                arguments: [state?.rawValue, state?.rawValue, limit]
            ).map(Self.outboxMessage(row:))
        }
    }

    static func outboxMessage(row: Row) throws -> OutboxMessage {
        guard let kind = OutboxMessage.Kind(rawValue: row["kind"]),
            let state = OutboxMessage.State(rawValue: row["state"])
        else { throw StoreError(.backend, "unreadable outbox row") }
        return OutboxMessage(
            id: row["id"], kind: kind, target: row["target"],
            receiver: row["receiver"] ?? OutboxMessage.receiver(kind: kind, target: row["target"]),
            eventID: row["event_id"], payload: row["payload"],
            createdAt: Date(timeIntervalSince1970: row["created_at"]),
            deliverUntil: Date(timeIntervalSince1970: row["deliver_until"]),
            nextAttemptAt: Date(timeIntervalSince1970: row["next_attempt_at"]), attempts: row["attempts"],
            state: state, lastError: row["last_error"],
            finishedAt: (row["finished_at"] as Double?).map(Date.init(timeIntervalSince1970:)))
    }
}
