public import CountersignCore
public import CountersignStore
public import Foundation
import PostgresNIO

extension PostgresStore {
    public func insertPendingEvent(
        _ event: ApprovalEvent, by requester: PendingRequester, limits: PendingLimits, announcing: [OutboxMessage],
        attached: PendingAttachment?, now: Date
    ) async throws {
        let logger = logger
        // READ COMMITTED under a lock per user instead of SERIALIZABLE: the
        // count and the insert stay together for this user, and events of
        // other users, whose index entries share pages, no longer fail each
        // other. A requester's event also takes its address's lock, always
        // after the user's, so that two never wait for each other. The
        // statements after the locks see every insert committed before.
        // Both locks in one statement: PostgreSQL's executor evaluates a
        // select list from left to right, so the user's is taken first
        // (a lock on NULL, for a backend's event, is none).
        let userKey = Self.userKey(of: event)
        let addressKey: String? =
            if case .requester(let address) = requester { "address\n" + address } else { nil }
        try await readCommittedWrite { db in
            db.send(
                """
                SELECT pg_advisory_xact_lock(hashtextextended(\(userKey), 0)),
                    pg_advisory_xact_lock(hashtextextended(\(addressKey), 0))
                """, logger: logger)
            let (open, endpoints) = try await Self.openPending(
                like: event, by: requester, window: limits.rateWindow, now: now, in: db, logger: logger)
            try PendingCap.decide(open, for: requester, limits: limits, now: now).orThrow()
            try Self.insert(event, into: db, requestedBy: requester, logger: logger)
            try Self.insert(announcing, into: db, logger: logger)
            switch attached {
            case .ciba(let request): try await Self.insert(request, into: db, logger: logger)
            case .signIn(let signIn): try await Self.insert(signIn, into: db, logger: logger)
            case nil: break
            }
            // Counted in the cap's statement: with none, no notice is made.
            if endpoints > 0 {
                try await Self.announce(WebhookNotice.created(event, now: now), into: db, logger: logger)
            }
        }
    }

    /// The open pending events ``PendingCap`` counts a new one with, in one
    /// round trip, and the number of the app's enabled webhook endpoints
    /// (none, and the new event's notice reads nothing more).
    ///
    /// The user's and the address's are two selects, each on its own
    /// partial index: as one with an OR, PostgreSQL read every event whose
    /// window was still open (by expiry), or every pending one, at each new
    /// event (docs/benchmarks.md, "A million events").
    private static func openPending(
        like event: ApprovalEvent, by requester: PendingRequester, window: TimeInterval, now: Date,
        in db: PostgresSession, logger: Logger
    ) async throws -> (PendingCap.Open, webhookEndpoints: Int) {
        let oldest = RequestRate.oldestCounted(at: now, window: window)
        let address: String? =
            if case .requester(let address) = requester { address } else { nil }
        let kind = address == nil ? "backend" : "requester"
        let row = try await db.row(
            """
            WITH open AS (
                SELECT id, expires_at, client_user_id, issuer, ip FROM events
                WHERE status = 'pending' AND requested_by = \(kind) AND issuer = \(event.issuer)
                  AND client_user_id = \(event.clientUserID) AND expires_at > \(now.seconds)
                UNION
                SELECT id, expires_at, client_user_id, issuer, ip FROM events
                WHERE status = 'pending' AND requested_by = 'requester' AND ip = \(address)
                  AND expires_at > \(now.seconds)
            ), counted AS (
                SELECT scope, minute, count FROM request_counts
                WHERE \(address)::text IS NOT NULL AND minute >= \(oldest)
                  AND ((scope = 'user' AND key = \(Self.userKey(of: event))) OR (scope = 'address' AND key = \(address)))
            )
            SELECT
                array(SELECT expires_at FROM open WHERE issuer = \(event.issuer)
                    AND client_user_id = \(event.clientUserID) AND (\(address)::text IS NULL OR ip = \(address)))
                    AS same_requester,
                array(SELECT expires_at FROM open WHERE \(address)::text IS NOT NULL AND issuer = \(event.issuer)
                    AND client_user_id = \(event.clientUserID)) AS user_from_requesters,
                array(SELECT expires_at FROM open WHERE ip = \(address)) AS from_address,
                (SELECT until FROM user_protections WHERE \(address)::text IS NOT NULL
                    AND issuer = \(event.issuer) AND client_user_id = \(event.clientUserID)) AS protected_until,
                array(SELECT minute FROM counted WHERE scope = 'user' ORDER BY minute) AS user_minutes,
                array(SELECT count FROM counted WHERE scope = 'user' ORDER BY minute) AS user_counts,
                array(SELECT minute FROM counted WHERE scope = 'address' ORDER BY minute) AS address_minutes,
                array(SELECT count FROM counted WHERE scope = 'address' ORDER BY minute) AS address_counts,
                (SELECT count(*) FROM webhook_endpoints WHERE api_key_id = \(event.issuer) AND disabled_at IS NULL)
                    AS webhook_endpoints
            """, logger: logger)
        func dates(_ column: String) throws -> [Date] {
            try (row?.value(column, as: [Double].self) ?? []).map(Date.init(timeIntervalSince1970:))
        }
        func minutes(_ scope: String) throws -> [RequestRate.Minute] {
            let numbers = try row?.value(scope + "_minutes", as: [Int64].self) ?? []
            let counts = try row?.value(scope + "_counts", as: [Int64].self) ?? []
            return zip(numbers, counts).map { RequestRate.Minute(number: $0, count: Int($1)) }
        }
        let open = PendingCap.Open(
            sameRequester: try dates("same_requester"), userFromRequesters: try dates("user_from_requesters"),
            fromAddress: try dates("from_address"), protectedUntil: try row?.optionalDate("protected_until"),
            createdForUser: try minutes("user"), createdFromAddress: try minutes("address"))
        return (open, Int(try row?.value("webhook_endpoints", as: Int64.self) ?? 1))
    }

    /// The key of a user's request counter.
    static func userKey(of event: ApprovalEvent) -> String {
        RequestCount.storedKey(issuer: event.issuer, clientUserID: event.clientUserID)
    }

    public func devicesAndRejections(issuer: String, clientUserID: String, rejectedSince: Date) async throws
        -> (devices: [TrustedDevice], rejected: Int)
    {
        let logger = logger
        // One statement: the count on a row of its own, joined with each of
        // the user's devices (a row of NULLs when there is none).
        return try await read { db in
            let rows = try await db.rows(
                """
                SELECT devices.*, counted.rejected FROM (
                    SELECT count(*) AS rejected FROM events
                    WHERE issuer = \(issuer) AND client_user_id = \(clientUserID) AND status = 'rejected'
                      AND decided_at >= \(rejectedSince.seconds)
                ) AS counted
                LEFT JOIN devices ON devices.issuer = \(issuer) AND devices.client_user_id = \(clientUserID)
                ORDER BY devices.created_at, devices.id
                """, logger: logger)
            let devices = try rows.filter { try $0.value("id", as: String?.self) != nil }.map(Self.device(row:))
            return (devices, Int(try rows.first?.value("rejected", as: Int64.self) ?? 0))
        }
    }

    public func insertEvent(_ event: ApprovalEvent) async throws {
        let logger = logger
        try await readCommittedWrite { db in
            try Self.insert(event, into: db, requestedBy: .backend, logger: logger)
            try await Self.announce(WebhookNotice.created(event, now: event.updatedAt), into: db, logger: logger)
            try Self.record(DecisionRecord(event, now: event.updatedAt), in: db, logger: logger)
        }
    }

    public func event(id: String) async throws -> ApprovalEvent? {
        let logger = logger
        return try await read { db in
            try await db.row("SELECT * FROM events WHERE id = \(id)", logger: logger).map(Self.event(row:))
        }
    }

    public func eventWithAppName(id: String) async throws -> (ApprovalEvent, appName: String?)? {
        let logger = logger
        return try await read { db in
            try await db.row(
                """
                SELECT events.*, (SELECT name FROM api_keys WHERE id = events.issuer AND revoked_at IS NULL) AS app_name
                FROM events WHERE id = \(id)
                """, logger: logger
            ).map { (try Self.event(row: $0), try $0.value("app_name", as: String?.self)) }
        }
    }

    public func events(issuer: String, clientUserID: String, status: EventStatus?, now: Date, limit: Int) async throws
        -> [ApprovalEvent]
    {
        let logger = logger
        let t = now.seconds
        // Ties are broken by id in byte order (`COLLATE "C"`), whatever the
        // database's collation, as in SQLite; so are decision records'.
        let order = " ORDER BY created_at DESC, id COLLATE \"C\" DESC LIMIT "
        let query: PostgresStatement =
            switch status {
            case nil:
                "SELECT * FROM events WHERE issuer = \(issuer) AND client_user_id = \(clientUserID)\(unescaped: order)\(limit)"
            case .pending:
                "SELECT * FROM events WHERE issuer = \(issuer) AND client_user_id = \(clientUserID) AND status = 'pending' AND expires_at > \(t)\(unescaped: order)\(limit)"
            case .expired:
                "SELECT * FROM events WHERE issuer = \(issuer) AND client_user_id = \(clientUserID) AND status = 'pending' AND expires_at <= \(t)\(unescaped: order)\(limit)"
            case .approved, .rejected:
                "SELECT * FROM events WHERE issuer = \(issuer) AND client_user_id = \(clientUserID) AND status = \(status!.rawValue)\(unescaped: order)\(limit)"
            }
        return try await read { [query] db in try await db.rows(query, logger: logger).map(Self.event(row:)) }
    }

    public func inboxEvents(issuer: String, clientUserID: String, now: Date, limit: Int) async throws
        -> [ApprovalEvent]
    {
        let logger = logger
        let t = now.seconds
        // The user's own (by `events_by_user`) and those naming them as an
        // approver (by `event_approvers`).
        return try await read { db in
            try await db.rows(
                """
                SELECT * FROM (
                    SELECT * FROM events
                    WHERE issuer = \(issuer) AND client_user_id = \(clientUserID) AND status = 'pending'
                      AND expires_at > \(t) AND quorum IS NULL
                    UNION ALL
                    SELECT * FROM events
                    WHERE id IN (SELECT event_id FROM event_approvers
                                 WHERE issuer = \(issuer) AND client_user_id = \(clientUserID) AND expires_at > \(t))
                      AND status = 'pending' AND expires_at > \(t)
                ) AS inbox
                ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT \(limit)
                """, logger: logger
            ).map(Self.event(row:))
        }
    }

    /// The inbox keys of the users who answer `event`.
    static func inboxKeys(of event: ApprovalEvent) -> [String] {
        event.answeringUsers.map { WakeKey.inbox(issuer: event.issuer, user: $0) }
    }

    public func events(issuer: String, clientUserID: String, before: Date, limit: Int) async throws
        -> [ApprovalEvent]
    {
        let logger = logger
        return try await read { db in
            try await db.rows(
                """
                SELECT * FROM events
                WHERE issuer = \(issuer) AND client_user_id = \(clientUserID) AND created_at < \(before.seconds)
                ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT \(limit)
                """, logger: logger
            ).map(Self.event(row:))
        }
    }

    /// What every change of an event writes with it: its webhook notice
    /// and, for an approval or rejection, its decision record; and, after
    /// commit, the wake-up of its waiters and of the inboxes that show it
    /// on every instance (``PostgresSession/notify(_:)``).
    /// `webhookEndpoints`: how many enabled endpoints the event's app has,
    /// when the caller's statement counted them (with none, no notice is
    /// made); nil reads them. A count is of the caller's statement's
    /// snapshot: an endpoint added while that statement waited for a row
    /// lock is not told of this change, as one added just after it.
    static func changed(
        _ event: ApprovalEvent, now: Date, webhookEndpoints: Int? = nil, in db: PostgresSession, logger: Logger
    ) async throws {
        db.notify([WakeKey.event(event.id)] + Self.inboxKeys(of: event))
        if webhookEndpoints != 0 {
            try await announce(WebhookNotice.decided(event, now: now), into: db, logger: logger)
        }
        try record(DecisionRecord(event, now: now), in: db, logger: logger)
        try await pingCIBAClient(of: event, now: now, in: db, logger: logger)
    }

    static func record(_ decision: DecisionRecord?, in db: PostgresSession, logger: Logger) throws {
        guard let decision else { return }
        try db.send(
            """
            INSERT INTO decision_records (event_id, issuer, client_user_id, decided_at, document)
            VALUES (\(decision.eventID), \(decision.issuer), \(decision.clientUserID), \(decision.decidedAt.seconds),
                \(decision.document))
            ON CONFLICT (event_id) DO NOTHING
            """, logger: logger)
    }

    public func decisionRecords(issuer: String, clientUserID: String, limit: Int) async throws -> [DecisionRecord] {
        let logger = logger
        return try await read { db in
            try await db.rows(
                """
                SELECT * FROM decision_records WHERE issuer = \(issuer) AND client_user_id = \(clientUserID)
                ORDER BY decided_at DESC, event_id COLLATE "C" DESC LIMIT \(limit)
                """, logger: logger
            ).map(Self.decisionRecord(row:))
        }
    }

    public func decisionRecords(issuer: String, clientUserID: String, before: Date, limit: Int) async throws
        -> [DecisionRecord]
    {
        let logger = logger
        return try await read { db in
            try await db.rows(
                """
                SELECT * FROM decision_records
                WHERE issuer = \(issuer) AND client_user_id = \(clientUserID) AND decided_at < \(before.seconds)
                ORDER BY decided_at DESC, event_id COLLATE "C" DESC LIMIT \(limit)
                """, logger: logger
            ).map(Self.decisionRecord(row:))
        }
    }

    /// A decision record as its row reads.
    private static func decisionRecord(row: PostgresRandomAccessRow) throws -> DecisionRecord {
        DecisionRecord(
            eventID: try row.value("event_id"), issuer: try row.value("issuer"),
            clientUserID: try row.value("client_user_id"), decidedAt: try row.date("decided_at"),
            document: try row.value("document"))
    }

    /// The row after a conditional UPDATE: it if the write happened, else
    /// `notFound` or `conflict`.
    static func afterConditionalWrite(id: String, changed: Int, in db: PostgresSession, logger: Logger)
        async throws -> ApprovalEvent
    {
        guard changed == 1, let row = try await db.row("SELECT * FROM events WHERE id = \(id)", logger: logger)
        else { try await refusal(ofChangeTo: id, in: db, logger: logger) }
        return try event(row: row)
    }

    /// Why a conditional UPDATE of event `id` changed nothing: `notFound`
    /// when there is no such event, else `conflict` with the event as this
    /// transaction sees it.
    static func refusal(ofChangeTo id: String, in db: PostgresSession, logger: Logger) async throws -> Never {
        guard let row = try await db.row("SELECT * FROM events WHERE id = \(id)", logger: logger) else {
            throw StoreError(.notFound, "no event \(id)")
        }
        throw StoreError(.conflict, "event \(id) is no longer pending", event: try event(row: row))
    }

    /// Inserts `event` in one statement; a pending one wakes its user's
    /// inboxes on every instance at commit. A requester's adds to its
    /// user's and its address's request counters in the same statement.
    static func insert(
        _ event: ApprovalEvent, into db: PostgresSession, requestedBy: PendingRequester, logger: Logger
    ) throws {
        let newDevice = try event.newDevice.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        let address: String? =
            if case .requester(let address) = requestedBy { address } else { nil }
        let requestedBy = requestedBy == .backend ? "backend" : "requester"
        try db.send(
            """
            WITH counted AS (
                INSERT INTO request_counts (scope, key, minute, count)
                SELECT scope, key, \(RequestRate.number(of: event.createdAt)), 1
                FROM (VALUES ('user', \(Self.userKey(of: event))), ('address', \(address))) AS keys (scope, key)
                WHERE \(address)::text IS NOT NULL
                ON CONFLICT (scope, key, minute) DO UPDATE SET count = request_counts.count + 1
            ), inserted AS (
                INSERT INTO events (id, created_at, updated_at, issuer, client_user_id, name, ip, location, method,
                    status, expires_at, details, requester_name, nonce, match_number, wrong_matches,
                    requester_token_digest, decided_by, decided_at, decision, new_device, code_attempts, requested_by,
                    user_verification, channel, quorum, approvals)
                VALUES (\(event.id), \(event.createdAt.seconds), \(event.updatedAt.seconds), \(event.issuer),
                    \(event.clientUserID), \(event.name), \(event.ip), \(event.location), \(event.method.rawValue),
                    \(event.storedStatus.rawValue), \(event.expiresAt.seconds), \(event.details), \(event.requesterName),
                    \(event.nonce), \(event.matchNumber), \(event.wrongMatches), \(event.requesterTokenDigest),
                    \(event.decidedBy), \(event.decidedAt?.seconds), \(event.decision), \(newDevice), \(event.codeAttempts),
                    \(requestedBy), \(event.userVerification), \(event.channel.rawValue),
                    \(try QuorumColumns.quorum(of: event)), \(try QuorumColumns.approvals(of: event)))
                RETURNING 1
            )
            SELECT 1
            """, logger: logger)
        if event.quorum != nil {
            // The approvers' inboxes find it by them.
            db.send(
                """
                INSERT INTO event_approvers (event_id, issuer, client_user_id, expires_at)
                SELECT \(event.id), \(event.issuer), approver, \(event.expiresAt.seconds)
                FROM unnest(\(event.answeringUsers)::text[]) AS approver
                """, logger: logger)
        }
        if event.storedStatus == .pending { db.notify(Self.inboxKeys(of: event)) }
    }

    static func event(row: PostgresRandomAccessRow) throws -> ApprovalEvent {
        guard let method = AuthMethod(rawValue: try row.value("method")),
            let status = EventStatus(rawValue: try row.value("status"))
        else { throw StoreError(.backend, "unreadable event row") }
        return ApprovalEvent(
            id: try row.value("id"), createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"),
            issuer: try row.value("issuer"), clientUserID: try row.value("client_user_id"),
            name: try row.value("name"), ip: try row.value("ip"), location: try row.value("location"),
            method: method, storedStatus: status, expiresAt: try row.date("expires_at"),
            details: try row.value("details"), requesterName: try row.value("requester_name"),
            nonce: try row.value("nonce"), matchNumber: try row.value("match_number"),
            wrongMatches: try row.value("wrong_matches"), requesterTokenDigest: try row.value("requester_token_digest"),
            decidedBy: try row.value("decided_by"), decidedAt: try row.optionalDate("decided_at"),
            decision: try row.value("decision"),
            newDevice: try row.value("new_device", as: String?.self).map {
                try JSONDecoder().decode(NewDevice.self, from: Data($0.utf8))
            },
            codeAttempts: try row.value("code_attempts"), withdrawnAt: try row.optionalDate("withdrawn_at"),
            storedReason: try row.value("status_reason", as: String?.self).flatMap(StatusReason.init(rawValue:)),
            userVerification: try row.value("user_verification"),
            assertion: try row.value("decision_assertion", as: String?.self).map {
                try JSONDecoder().decode(PasskeyAssertion.self, from: Data($0.utf8))
            }, channel: EventChannel(rawValue: try row.value("channel")) ?? .api,
            quorum: try QuorumColumns.quorum(try row.value("quorum")),
            approvals: try QuorumColumns.approvals(try row.value("approvals")))
    }
}
