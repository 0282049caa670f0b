public import CountersignCore
public import CountersignStore
public import Foundation
import PostgresNIO

/// The changes of a pending event: decided, reported, a wrong number, withdrawn.
extension PostgresStore {
    public func settleEvent(id: String, decision: RecordedDecision, now: Date) async throws -> ApprovalEvent {
        let logger = logger
        // A transaction, not the one statement alone: the webhook messages
        // the decision makes are written with it.
        return try await readCommittedWrite { db in
            let (event, endpoints) = try await Self.settle(
                id: id, decision: decision, reason: nil, now: now, in: db, logger: logger)
            try await Self.changed(event, now: now, webhookEndpoints: endpoints, in: db, logger: logger)
            if decision.status == .approved, let device = decision.enrolls {
                // A duplicate key throws alreadyExists and rolls the decision back.
                try await Self.enroll(
                    device, by: ChangeAuthor(actor: decision.deviceID, ip: decision.ip), at: now, into: db,
                    logger: logger)
            }
            return event
        }
    }

    public func reportFraud(
        id: String, decision: RecordedDecision, now: Date,
        _ change:
            @escaping @Sendable (_ reported: ApprovalEvent, _ pending: [ApprovalEvent], _ running: Date?)
            throws -> FraudReport
    ) async throws -> FraudReport {
        let logger = logger
        return try await update { db in
            // The user's lock, which a new pending event of theirs takes
            // too: none is opened between the rejections and the protection.
            if let user = try await db.row(
                "SELECT issuer, client_user_id FROM events WHERE id = \(id)", logger: logger)
            {
                let key = RequestCount.storedKey(
                    issuer: try user.value("issuer", as: String.self),
                    clientUserID: try user.value("client_user_id", as: String.self))
                try await db.run("SELECT pg_advisory_xact_lock(hashtextextended(\(key), 0))", logger: logger)
            }
            let (reported, _) = try await Self.settle(
                id: id, decision: decision, reason: .fraudReported, now: now, in: db, logger: logger)
            // Under the user's lock no event of theirs is added, and rows
            // read FOR UPDATE are not decided under us.
            let pending = try await db.rows(
                """
                SELECT * FROM events
                WHERE issuer = \(reported.issuer) AND client_user_id = \(reported.clientUserID)
                  AND status = 'pending'
                ORDER BY created_at, id FOR UPDATE
                """, logger: logger
            ).map(Self.event(row:))
            let running = try await db.row(
                """
                SELECT until FROM user_protections
                WHERE issuer = \(reported.issuer) AND client_user_id = \(reported.clientUserID) FOR UPDATE
                """, logger: logger
            )?.date("until")
            let report = try Self.applying { try change(reported, pending, running) }
            for event in report.alsoRejected { try await Self.update(event, in: db, logger: logger) }
            try await db.run(
                """
                INSERT INTO user_protections (issuer, client_user_id, until)
                VALUES (\(reported.issuer), \(reported.clientUserID), \(report.protectedUntil.seconds))
                ON CONFLICT (issuer, client_user_id) DO UPDATE SET until = excluded.until
                """, logger: logger)
            try await Self.announce([WebhookNotice.fraud(report, now: now)], into: db, logger: logger)
            for event in [reported] + report.alsoRejected {
                try await Self.changed(event, now: now, in: db, logger: logger)
            }
            return report
        }
    }

    /// A decision's conditional write, in the caller's transaction: the
    /// decision's id spent first (nothing is settled by a replay), the
    /// deciding device's row locked (a revocation in progress is waited for
    /// and then seen), and the event changed only if it is still pending on
    /// its newest version, so of two decisions only the first changes it.
    /// With the event, the number of its app's enabled webhook endpoints,
    /// counted in the same statement: none, and the decision's notice
    /// reads nothing more.
    static func settle(
        id: String, decision: RecordedDecision, reason: StatusReason?, now: Date, in db: PostgresSession,
        logger: Logger
    ) async throws -> (ApprovalEvent, webhookEndpoints: Int) {
        let t = now.seconds
        let spends = decision.spends
        if let assertion = decision.assertion, let count = decision.signCount {
            try await advanceSignCount(
                deviceID: decision.deviceID, credentialID: assertion.credentialID, to: count, in: db, logger: logger)
        }
        let assertion = try decision.assertion.map {
            String(decoding: try JSONEncoder().encode($0), as: UTF8.self)
        }
        let row = try await db.row(
            """
            WITH spent AS (
                INSERT INTO proof_ids (device_id, jti, expires_at)
                SELECT \(spends?.deviceID), \(spends?.jti), \(spends?.expiresAt.seconds) WHERE \(spends?.jti)::text IS NOT NULL
                ON CONFLICT DO NOTHING
                RETURNING 1
            ), device AS (
                SELECT issuer, client_user_id FROM devices
                WHERE id = \(decision.deviceID) AND revoked_at IS NULL AND suspended_at IS NULL
                FOR SHARE
            ), settled AS (
                UPDATE events
                SET status = \(decision.status.rawValue), decided_by = \(decision.deviceID), decided_at = \(t),
                    decision = \(decision.jws), updated_at = \(t), status_reason = \(reason?.rawValue),
                    decision_assertion = \(assertion)
                FROM device
                WHERE events.id = \(id) AND events.status = 'pending' AND events.expires_at > \(t)
                  AND device.issuer = events.issuer AND device.client_user_id = events.client_user_id
                  AND (\(spends?.jti)::text IS NULL OR EXISTS (SELECT 1 FROM spent))
                RETURNING events.*
            )
            SELECT settled.*, (SELECT count(*) FROM spent) AS spent,
                (SELECT count(*) FROM webhook_endpoints
                 WHERE api_key_id = settled.issuer AND disabled_at IS NULL) AS webhook_endpoints
            FROM (SELECT 1) AS one LEFT JOIN settled ON true
            """, logger: logger)
        if let row, try row.value("id", as: String?.self) != nil {
            return (try event(row: row), Int(try row.value("webhook_endpoints", as: Int64.self)))
        }
        if let spends, let row, try row.value("spent", as: Int64.self) == 0 {
            throw StoreError(.replayed, "device \(spends.deviceID) used \(spends.jti) before")
        }
        try await refusal(ofChangeTo: id, in: db, logger: logger)
    }

    public func updateEvent(
        id: String, spending: SpentProofID?, now: Date,
        _ change: @escaping @Sendable (ApprovalEvent) throws -> ApprovalEvent
    ) async throws -> ApprovalEvent {
        let logger = logger
        // READ COMMITTED: the row lock orders the changes of one event, and
        // the row read after the lock is its newest version; a SERIALIZABLE
        // transaction would only add retries, and `change` runs once.
        return try await update { db in
            if let spending { try await Self.spend(spending, in: db, logger: logger) }
            guard let row = try await db.row("SELECT * FROM events WHERE id = \(id) FOR UPDATE", logger: logger)
            else { throw StoreError(.notFound, "no event \(id)") }
            let after = try Self.applying { try change(try Self.event(row: row)) }
            try await Self.update(after, in: db, logger: logger)
            try await Self.changed(after, now: now, in: db, logger: logger)
            return after
        }
    }

    public func updateEvent<Outcome: Sendable>(
        id: String, decidedBy deviceID: String, spending: SpentProofID?, passkey: PasskeyUse?, now: Date,
        _ change: @escaping @Sendable (ApprovalEvent, TrustedDevice?) throws -> (ApprovalEvent, Outcome)
    ) async throws -> (ApprovalEvent, Outcome) {
        let logger = logger
        // The device before the event, as a decision's conditional write
        // takes them: two approvals of one event wait for each other on
        // the event's row, and the second sees the first's approval.
        return try await update { db in
            if let spending { try await Self.spend(spending, in: db, logger: logger) }
            if let passkey {
                try await Self.advanceSignCount(
                    deviceID: deviceID, credentialID: passkey.credentialID, to: passkey.signCount, in: db,
                    logger: logger)
            }
            let device = try await db.row("SELECT * FROM devices WHERE id = \(deviceID) FOR SHARE", logger: logger)
                .map(Self.device(row:))
            guard let row = try await db.row("SELECT * FROM events WHERE id = \(id) FOR UPDATE", logger: logger)
            else { throw StoreError(.notFound, "no event \(id)") }
            let event = try Self.event(row: row)
            let (after, outcome) = try Self.applying { try change(event, device) }
            if after != event {
                try await Self.update(after, in: db, logger: logger)
                try await Self.changed(after, now: now, in: db, logger: logger)
            }
            return (after, outcome)
        }
    }

    /// Writes what a rule changed of an event read (and locked) in this
    /// transaction: the columns ``updateEvent(id:spending:now:_:)`` names,
    /// and the decision, its assertion and a quorum's approvals.
    static func update(_ event: ApprovalEvent, in db: PostgresSession, logger: Logger) async throws {
        let assertion = try event.assertion.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        try await db.run(
            """
            UPDATE events
            SET status = \(event.storedStatus.rawValue), status_reason = \(event.storedReason?.rawValue),
                method = \(event.method.rawValue), decided_by = \(event.decidedBy),
                decided_at = \(event.decidedAt?.seconds), wrong_matches = \(event.wrongMatches),
                code_attempts = \(event.codeAttempts), expires_at = \(event.expiresAt.seconds), withdrawn_at = \(event.withdrawnAt?.seconds),
                updated_at = \(event.updatedAt.seconds), decision = \(event.decision), decision_assertion = \(assertion),
                approvals = \(try QuorumColumns.approvals(of: event))
            WHERE id = \(event.id)
            """, logger: logger)
    }
}
