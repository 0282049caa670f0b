public import CountersignCore
public import CountersignStore
public import Foundation
import GRDB

extension SQLiteStore {
    public func insertEvent(_ event: ApprovalEvent) async throws {
        try await write { db in
            try Self.insert(event, into: db, requestedBy: .backend)
            try Self.announce(WebhookNotice.created(event, now: event.updatedAt), into: db)
            try Self.record(DecisionRecord(event, now: event.updatedAt), in: db)
        }
    }

    public func event(id: String) async throws -> ApprovalEvent? {
        try read { db in try Self.event(id: id, in: db) }
    }

    public func eventWithAppName(id: String) async throws -> (ApprovalEvent, appName: String?)? {
        try read { db in
            guard let event = try Self.event(id: id, in: db) else { return nil }
            let name = try String.fetchOne(
                db.cachedStatement(sql: "SELECT name FROM api_keys WHERE id = ? AND revoked_at IS NULL"),
                arguments: [event.issuer])
            return (event, name)
        }
    }

    public func events(issuer: String, clientUserID: String, status: EventStatus?, now: Date, limit: Int) async throws
        -> [ApprovalEvent]
    {
        try userEvents(issuer: issuer, clientUserID: clientUserID, status: status, now: now, limit: limit)
    }

    /// The events, read synchronously on the reader pool.
    private func userEvents(issuer: String, clientUserID: String, status: EventStatus?, now: Date, limit: Int) throws
        -> [ApprovalEvent]
    {
        let now = now.timeIntervalSince1970
        let sql: String
        let arguments: StatementArguments
        switch status {
        case nil:
            sql = Self.userEvents
            arguments = [issuer, clientUserID, limit]
        case .pending:
            sql = Self.userPendingEvents
            arguments = [issuer, clientUserID, now, limit]
        case .expired:
            sql = Self.userExpiredEvents
            arguments = [issuer, clientUserID, now, limit]
        case .approved, .rejected:
            sql = Self.userEventsWithStatus
            arguments = [issuer, clientUserID, status!.rawValue, limit]
        }
        return try read { db in
            try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).map(Self.event(row:))
        }
    }

    public func events(issuer: String, clientUserID: String, before: Date, limit: Int) async throws
        -> [ApprovalEvent]
    {
        try read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: Self.userEventsBefore),
                arguments: [issuer, clientUserID, before.timeIntervalSince1970, limit]
            ).map(Self.event(row:))
        }
    }

    public func inboxEvents(issuer: String, clientUserID: String, now: Date, limit: Int) async throws
        -> [ApprovalEvent]
    {
        let now = now.timeIntervalSince1970
        return try read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: Self.inboxEvents),
                arguments: [issuer, clientUserID, now, issuer, clientUserID, now, now, limit]
            ).map(Self.event(row:))
        }
    }

    /// The pending events a user's devices answer: their own without a
    /// quorum (served by `events_by_user`), and those naming them as an
    /// approver (by `event_approvers`).
    private static let inboxEvents = """
        SELECT \(eventColumns) FROM events
        WHERE issuer = ? AND client_user_id = ? AND status = 'pending' AND expires_at > ? AND quorum IS NULL
        UNION ALL
        SELECT \(eventColumns) FROM events
        WHERE id IN (SELECT event_id FROM event_approvers WHERE issuer = ? AND client_user_id = ? AND expires_at > ?)
          AND status = 'pending' AND expires_at > ?
        ORDER BY created_at DESC, id DESC LIMIT ?
        """

    /// A user's events, newest first: all of them, or those in one state,
    /// or those created before a time (served by `events_by_user`).
    private static let userEvents = userEventsWhere("")
    private static let userEventsBefore = userEventsWhere(" AND created_at < ?")
    private static let userPendingEvents = userEventsWhere(" AND status = 'pending' AND expires_at > ?")
    private static let userExpiredEvents = userEventsWhere(" AND status = 'pending' AND expires_at <= ?")
    private static let userEventsWithStatus = userEventsWhere(" AND status = ?")

    private static func userEventsWhere(_ condition: String) -> String {
        "SELECT \(eventColumns) FROM events WHERE issuer = ? AND client_user_id = ?\(condition)"
            + " ORDER BY created_at DESC, id DESC LIMIT ?"
    }

    public func settleEvent(id: String, decision: RecordedDecision, now: Date) async throws -> ApprovalEvent {
        try await write { db in
            let settled = try Self.settle(id: id, decision: decision, reason: nil, now: now, in: db)
            try Self.changed(settled, now: now, in: db)
            if decision.status == .approved, let device = decision.enrolls {
                // A duplicate key throws alreadyExists and rolls the decision back.
                try Self.enroll(
                    device, by: ChangeAuthor(actor: decision.deviceID, ip: decision.ip), at: now, into: db)
            }
            return settled
        }
    }

    public func reportFraud(
        id: String, decision: RecordedDecision, now: Date,
        _ change:
            @escaping @Sendable (_ reported: ApprovalEvent, _ pending: [ApprovalEvent], _ running: Date?)
            throws -> FraudReport
    ) async throws -> FraudReport {
        try await write { db in
            let reported = try Self.settle(id: id, decision: decision, reason: .fraudReported, now: now, in: db)
            let pending = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.eventColumns) FROM events
                        WHERE issuer = ? AND client_user_id = ? AND status = 'pending' ORDER BY created_at, id
                        """),
                arguments: [reported.issuer, reported.clientUserID]
            ).map(Self.event(row:))
            let running = try Double.fetchOne(
                db, sql: "SELECT until FROM user_protections WHERE issuer = ? AND client_user_id = ?",
                arguments: [reported.issuer, reported.clientUserID]
            ).map(Date.init(timeIntervalSince1970:))
            let report = try change(reported, pending, running)
            for event in report.alsoRejected { try Self.update(event, in: db) }
            try db.execute(
                sql: """
                    INSERT INTO user_protections (issuer, client_user_id, until) VALUES (?, ?, ?)
                    ON CONFLICT (issuer, client_user_id) DO UPDATE SET until = excluded.until
                    """,
                arguments: [reported.issuer, reported.clientUserID, report.protectedUntil.timeIntervalSince1970])
            try Self.announce([WebhookNotice.fraud(report, now: now)], into: db)
            for event in [reported] + report.alsoRejected { try Self.changed(event, now: now, in: db) }
            return report
        }
    }

    /// The conditional write of a decision (its id spent first): the event
    /// settled by an unrevoked device of its user, or `conflict`.
    private static func settle(
        id: String, decision: RecordedDecision, reason: StatusReason?, now: Date, in db: Database
    ) throws -> ApprovalEvent {
        if let spent = decision.spends { try spend(spent, in: db) }
        if let assertion = decision.assertion, let count = decision.signCount {
            try advanceSignCount(deviceID: decision.deviceID, credentialID: assertion.credentialID, to: count, in: db)
        }
        try db.cachedStatement(
            sql: """
                UPDATE events
                SET status = ?, decided_by = ?, decided_at = ?, decision = ?, updated_at = ?, status_reason = ?,
                    decision_assertion = ?
                WHERE id = ? AND status = 'pending' AND expires_at > ?
                  AND EXISTS (SELECT 1 FROM devices d
                              WHERE d.id = ? AND d.revoked_at IS NULL AND d.suspended_at IS NULL
                                AND d.issuer = events.issuer AND d.client_user_id = events.client_user_id)
                """
        ).execute(
            arguments: [
                decision.status.rawValue, decision.deviceID, now.timeIntervalSince1970, decision.jws,
                now.timeIntervalSince1970, reason?.rawValue, try decision.assertion.map(Self.assertionText), id,
                now.timeIntervalSince1970, decision.deviceID,
            ])
        return try afterConditionalWrite(id: id, in: db)
    }

    public func updateEvent(
        id: String, spending: SpentProofID?, now: Date,
        _ change: @escaping @Sendable (ApprovalEvent) throws -> ApprovalEvent
    ) async throws -> ApprovalEvent {
        try await write { db in
            if let spending { try Self.spend(spending, in: db) }
            // Serialized with every other write: the event read here is the
            // one the update replaces.
            guard let event = try Self.event(id: id, in: db) else { throw StoreError(.notFound, "no event \(id)") }
            let after = try change(event)
            try Self.update(after, in: db)
            try Self.changed(after, now: now, in: db)
            return after
        }
    }

    public func updateEvent<Outcome: Sendable>(
        id: String, decidedBy deviceID: String, spending: SpentProofID?, passkey: PasskeyUse?, now: Date,
        _ change: @escaping @Sendable (ApprovalEvent, TrustedDevice?) throws -> (ApprovalEvent, Outcome)
    ) async throws -> (ApprovalEvent, Outcome) {
        try await write { db in
            if let spending { try Self.spend(spending, in: db) }
            if let passkey {
                try Self.advanceSignCount(
                    deviceID: deviceID, credentialID: passkey.credentialID, to: passkey.signCount, in: db)
            }
            // Serialized with every other write: the device and the event
            // read here stay as they are until this commits.
            let device = try Self.device(id: deviceID, in: db)
            guard let event = try Self.event(id: id, in: db) else { throw StoreError(.notFound, "no event \(id)") }
            let (after, outcome) = try change(event, device)
            if after != event {
                try Self.update(after, in: db)
                try Self.changed(after, now: now, in: db)
            }
            return (after, outcome)
        }
    }

    /// Writes what a rule changed of an event read in this transaction:
    /// the columns ``updateEvent(id:spending:now:_:)`` names, and the
    /// decision, its assertion and a quorum's approvals.
    static func update(_ event: ApprovalEvent, in db: Database) throws {
        try db.cachedStatement(
            sql: """
                UPDATE events SET status = ?, status_reason = ?, method = ?, decided_by = ?, decided_at = ?,
                    wrong_matches = ?, code_attempts = ?, expires_at = ?, withdrawn_at = ?, updated_at = ?,
                    decision = ?, decision_assertion = ?, approvals = ?
                WHERE id = ?
                """
        ).execute(arguments: [
            event.storedStatus.rawValue, event.storedReason?.rawValue, event.method.rawValue, event.decidedBy,
            event.decidedAt?.timeIntervalSince1970, event.wrongMatches, event.codeAttempts,
            event.expiresAt.timeIntervalSince1970, event.withdrawnAt?.timeIntervalSince1970,
            event.updatedAt.timeIntervalSince1970, event.decision, try event.assertion.map(Self.assertionText),
            try QuorumColumns.approvals(of: event), event.id,
        ])
    }

    /// What every change that closes an event writes with it: its webhook
    /// notice and, for an approval or rejection, its decision record.
    static func changed(_ event: ApprovalEvent, now: Date, in db: Database) throws {
        try announce(WebhookNotice.decided(event, now: now), into: db)
        try record(DecisionRecord(event, now: now), in: db)
        try pingCIBAClient(of: event, now: now, in: db)
    }

    static func record(_ decision: DecisionRecord?, in db: Database) throws {
        guard let decision else { return }
        try db.cachedStatement(
            sql: """
                INSERT INTO decision_records (event_id, issuer, client_user_id, decided_at, document)
                VALUES (?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING
                """
        ).execute(arguments: [
            decision.eventID, decision.issuer, decision.clientUserID, decision.decidedAt.timeIntervalSince1970,
            decision.document,
        ])
    }

    public func decisionRecords(issuer: String, clientUserID: String, limit: Int) async throws -> [DecisionRecord] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM decision_records WHERE issuer = ? AND client_user_id = ?
                    ORDER BY decided_at DESC, event_id DESC LIMIT ?
                    """,
                arguments: [issuer, clientUserID, limit]
            ).map(Self.decisionRecord(row:))
        }
    }

    public func decisionRecords(issuer: String, clientUserID: String, before: Date, limit: Int) async throws
        -> [DecisionRecord]
    {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM decision_records WHERE issuer = ? AND client_user_id = ? AND decided_at < ?
                    ORDER BY decided_at DESC, event_id DESC LIMIT ?
                    """,
                arguments: [issuer, clientUserID, before.timeIntervalSince1970, limit]
            ).map(Self.decisionRecord(row:))
        }
    }

    private static func decisionRecord(row: Row) -> DecisionRecord {
        DecisionRecord(
            eventID: row["event_id"], issuer: row["issuer"], clientUserID: row["client_user_id"],
            decidedAt: Date(timeIntervalSince1970: row["decided_at"]), document: row["document"])
    }

    /// The row after a conditional UPDATE: it if the write happened, else
    /// `notFound`, or `conflict` with the event as it stands.
    static func afterConditionalWrite(id: String, in db: Database) throws -> ApprovalEvent {
        let changed = db.changesCount == 1
        guard let event = try event(id: id, in: db) else { throw StoreError(.notFound, "no event \(id)") }
        guard changed else { throw StoreError(.conflict, "event \(id) is no longer pending", event: event) }
        return event
    }

    static func insert(_ event: ApprovalEvent, into db: Database, requestedBy: PendingRequester) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO events (id, created_at, updated_at, issuer, client_user_id, name, ip, location, method,
                    status, expires_at, details, requester_name, nonce, match_number, wrong_matches,
                    requester_token_digest, decided_by, decided_at, decision, new_device, requested_by,
                    user_verification, channel, quorum, approvals)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [
                event.id, event.createdAt.timeIntervalSince1970, event.updatedAt.timeIntervalSince1970, event.issuer,
                event.clientUserID, event.name, event.ip, event.location, event.method.rawValue,
                event.storedStatus.rawValue, event.expiresAt.timeIntervalSince1970, event.details,
                event.requesterName, event.nonce, event.matchNumber, event.wrongMatches, event.requesterTokenDigest,
                event.decidedBy, event.decidedAt?.timeIntervalSince1970, event.decision,
                try event.newDevice.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) },
                requestedBy == .backend ? "backend" : "requester", event.userVerification, event.channel.rawValue,
                try QuorumColumns.quorum(of: event), try QuorumColumns.approvals(of: event),
            ])
        // The approvers' inboxes find it by them.
        guard event.quorum != nil else { return }
        for user in event.answeringUsers {
            try db.cachedStatement(
                sql: "INSERT INTO event_approvers (event_id, issuer, client_user_id, expires_at) VALUES (?, ?, ?, ?)"
            ).execute(arguments: [event.id, event.issuer, user, event.expiresAt.timeIntervalSince1970])
        }
    }

    /// An assertion as the events table keeps it: its JSON.
    static func assertionText(_ assertion: PasskeyAssertion) throws -> String {
        String(decoding: try JSONEncoder().encode(assertion), as: UTF8.self)
    }

    /// The columns ``event(row:)`` reads, in its order. Read by position:
    /// looking 24 columns up by name, case-insensitively, took about 3 % of
    /// the broker's samples under load.
    static let eventColumns = """
        id, created_at, updated_at, issuer, client_user_id, name, ip, location, method, status, expires_at, \
        details, requester_name, nonce, match_number, wrong_matches, requester_token_digest, decided_by, \
        decided_at, decision, new_device, code_attempts, withdrawn_at, status_reason, user_verification, \
        decision_assertion, channel, quorum, approvals
        """

    static let eventByID = "SELECT \(eventColumns) FROM events WHERE id = ?"

    /// The event with this id, or nil.
    static func event(id: String, in db: Database) throws -> ApprovalEvent? {
        try Row.fetchOne(db.cachedStatement(sql: eventByID), arguments: [id]).map(event(row:))
    }

    /// An event from a row of `SELECT \(eventColumns)`.
    static func event(row: Row) throws -> ApprovalEvent {
        guard let method = AuthMethod(rawValue: row[8]), let status = EventStatus(rawValue: row[9]) else {
            throw StoreError(.backend, "unreadable event row")
        }
        return ApprovalEvent(
            id: row[0], createdAt: Date(timeIntervalSince1970: row[1]), updatedAt: Date(timeIntervalSince1970: row[2]),
            issuer: row[3], clientUserID: row[4], name: row[5], ip: row[6], location: row[7], method: method,
            storedStatus: status, expiresAt: Date(timeIntervalSince1970: row[10]), details: row[11],
            requesterName: row[12], nonce: row[13], matchNumber: row[14], wrongMatches: row[15],
            requesterTokenDigest: row[16], decidedBy: row[17],
            decidedAt: (row[18] as Double?).map(Date.init(timeIntervalSince1970:)), decision: row[19],
            newDevice: try (row[20] as String?).map { try JSONDecoder().decode(NewDevice.self, from: Data($0.utf8)) },
            codeAttempts: row[21], withdrawnAt: (row[22] as Double?).map(Date.init(timeIntervalSince1970:)),
            storedReason: (row[23] as String?).flatMap(StatusReason.init(rawValue:)), userVerification: row[24],
            assertion: try (row[25] as String?).map {
                try JSONDecoder().decode(PasskeyAssertion.self, from: Data($0.utf8))
            }, channel: EventChannel(rawValue: row[26]) ?? .api,
            quorum: try QuorumColumns.quorum(row[27]), approvals: try QuorumColumns.approvals(row[28]))
    }
}
