public import CountersignCore
public import CountersignStore
public import Foundation
import GRDB

extension SQLiteStore {
    public func insertPendingEvent(
        _ event: ApprovalEvent, by requester: PendingRequester, limits: PendingLimits, announcing: [OutboxMessage],
        attached: PendingAttachment?, now: Date
    ) async throws {
        try await write { db in
            let open = try Self.openPending(like: event, by: requester, window: limits.rateWindow, now: now, in: db)
            try PendingCap.decide(open, for: requester, limits: limits, now: now).orThrow()
            try Self.insert(event, into: db, requestedBy: requester)
            if case .requester(let address) = requester {
                try Self.count(
                    RequestRate.number(of: event.createdAt), keys: Self.rateKeys(of: event, from: address), in: db)
            }
            try Self.insert(announcing, into: db)
            switch attached {
            case .ciba(let request): try Self.insert(request, into: db)
            case .signIn(let signIn): try Self.insert(signIn, into: db)
            case nil: break
            }
            try Self.announce(WebhookNotice.created(event, now: now), into: db)
        }
    }

    /// The open pending events ``PendingCap`` counts a new one with.
    private static func openPending(
        like event: ApprovalEvent, by requester: PendingRequester, window: TimeInterval, now: Date, in db: Database
    ) throws -> PendingCap.Open {
        func minutes(_ key: (scope: String, key: String)) throws -> [RequestRate.Minute] {
            try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT minute, count FROM request_counts WHERE scope = ? AND key = ? AND minute >= ?"),
                arguments: [key.scope, key.key, RequestRate.oldestCounted(at: now, window: window)]
            ).map { RequestRate.Minute(number: $0[0], count: $0[1]) }
        }
        func expiries(_ sql: String, _ arguments: StatementArguments) throws -> [Date] {
            try Double.fetchAll(
                db.cachedStatement(
                    sql: "SELECT expires_at FROM events WHERE status = 'pending' AND expires_at > ? AND " + sql),
                arguments: [now.timeIntervalSince1970] + arguments
            ).map(Date.init(timeIntervalSince1970:))
        }
        let user = "issuer = ? AND client_user_id = ? AND requested_by = ?"
        switch requester {
        case .backend:
            return PendingCap.Open(
                sameRequester: try expiries(user, [event.issuer, event.clientUserID, "backend"]))
        case .requester(let address):
            let protectedUntil = try Double.fetchOne(
                db.cachedStatement(sql: "SELECT until FROM user_protections WHERE issuer = ? AND client_user_id = ?"),
                arguments: [event.issuer, event.clientUserID])
            return PendingCap.Open(
                sameRequester: try expiries(
                    user + " AND ip = ?", [event.issuer, event.clientUserID, "requester", address]),
                userFromRequesters: try expiries(user, [event.issuer, event.clientUserID, "requester"]),
                fromAddress: try expiries("requested_by = 'requester' AND ip = ?", [address]),
                protectedUntil: protectedUntil.map(Date.init(timeIntervalSince1970:)),
                createdForUser: try minutes(rateKeys(of: event, from: address)[0]),
                createdFromAddress: try minutes(rateKeys(of: event, from: address)[1]))
        }
    }

    /// The counters a requester's event adds to: its user's and its address's.
    private static func rateKeys(of event: ApprovalEvent, from address: String) -> [(scope: String, key: String)] {
        [
            ("user", RequestCount.storedKey(issuer: event.issuer, clientUserID: event.clientUserID)),
            ("address", address),
        ]
    }

    /// One more request in `minute` for each of `keys`.
    private static func count(_ minute: Int64, keys: [(scope: String, key: String)], in db: Database) throws {
        for key in keys {
            try db.cachedStatement(
                sql: """
                    INSERT INTO request_counts (scope, key, minute, count) VALUES (?, ?, ?, 1)
                    ON CONFLICT (scope, key, minute) DO UPDATE SET count = count + 1
                    """
            ).execute(arguments: [key.scope, key.key, minute])
        }
    }

    public func devicesAndRejections(issuer: String, clientUserID: String, rejectedSince: Date) async throws
        -> (devices: [TrustedDevice], rejected: Int)
    {
        try read { db in
            let rejected =
                try Int.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT count(*) FROM events
                            WHERE issuer = ? AND client_user_id = ? AND status = 'rejected' AND decided_at >= ?
                            """),
                    arguments: [issuer, clientUserID, rejectedSince.timeIntervalSince1970]) ?? 0
            return (try Self.devices(issuer: issuer, clientUserID: clientUserID, in: db), rejected)
        }
    }
}
