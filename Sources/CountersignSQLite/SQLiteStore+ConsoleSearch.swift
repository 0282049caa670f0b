public import CountersignCore
import CountersignStore
public import Foundation
import GRDB

extension SQLiteStore {
    public func users(prefix: String, after: String?, limit: Int) async throws -> [UserSummary] {
        if UserSummary.findsNobody(prefix: prefix) { return [] }
        let after = UserSummary.position(after: after)
        // A range of `devices_by_user_id`, in byte order (BINARY
        // collation); no user id is empty, so `> ''` is every one.
        return try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT client_user_id, group_concat(DISTINCT issuer), COUNT(*),
                        SUM(revoked_at IS NULL), MAX(last_seen_at)
                    FROM devices WHERE client_user_id >= ? AND client_user_id < ? AND client_user_id > ?
                    GROUP BY client_user_id ORDER BY client_user_id LIMIT ?
                    """,
                arguments: [prefix, UserSummary.upperBound(ofPrefix: prefix), after ?? "", limit]
            ).map { row in
                UserSummary(
                    clientUserID: row[0], issuers: (row[1] as String).split(separator: ",").map(String.init).sorted(),
                    activeDevices: row[3], devices: row[2],
                    lastSeenAt: (row[4] as Double?).map(Date.init(timeIntervalSince1970:)))
            }
        }
    }

    public func searchEvents(_ query: EventQuery, now: Date, limit: Int) async throws -> [ApprovalEvent] {
        if query.findsNothing { return [] }
        var conditions: [String] = []
        var arguments = StatementArguments()
        func add(_ condition: String, _ values: any DatabaseValueConvertible...) {
            conditions.append(condition)
            for value in values { arguments += [value] }
        }
        if let issuer = query.issuer { add("issuer = ?", issuer) }
        if let user = query.clientUserID {
            // Across apps, every app named lets `events_by_user` find the
            // user's events (0.03 ms at 100,000 events, where reading them
            // by time to find the user's took 68 ms). Every event's app is
            // a key of the store: keys are revoked, never deleted.
            if query.issuer == nil { conditions.append("issuer IN (SELECT id FROM api_keys)") }
            add("client_user_id = ?", user)
        }
        switch query.status {
        case nil: break
        case .pending: add("status = 'pending' AND expires_at > ?", now.timeIntervalSince1970)
        case .expired: add("status = 'pending' AND expires_at <= ?", now.timeIntervalSince1970)
        case .approved, .rejected: add("status = ?", query.status!.rawValue)
        }
        if let name = query.name { add("name = ?", name) }
        if let channel = query.channel { add("channel = ?", channel.rawValue) }
        if let ip = query.ip { add("ip = ?", ip) }
        if let from = query.from { add("created_at >= ?", from.timeIntervalSince1970) }
        if let to = query.to { add("created_at < ?", to.timeIntervalSince1970) }
        if let after = query.after {
            let t = after.createdAt.timeIntervalSince1970
            add("(created_at < ? OR (created_at = ? AND id < ?))", t, t, after.id)
        }
        arguments += [limit]
        let whereClause = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return try read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT \(Self.eventColumns) FROM events\(whereClause) ORDER BY created_at DESC, id DESC LIMIT ?",
                arguments: arguments
            ).map(Self.event(row:))
        }
    }

    public func eventTallies(since: Date, now: Date) async throws -> [EventTally] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT issuer, channel,
                        CASE WHEN status = 'pending' AND expires_at <= ? THEN 'expired' ELSE status END AS state,
                        status_reason, method, COUNT(*)
                    FROM events WHERE created_at >= ?
                    GROUP BY issuer, channel, state, status_reason, method
                    """,
                arguments: [now.timeIntervalSince1970, since.timeIntervalSince1970]
            ).map { row in
                guard let status = EventStatus(rawValue: row[2]), let method = AuthMethod(rawValue: row[4]) else {
                    throw StoreError(.backend, "unreadable event tally")
                }
                return EventTally(
                    issuer: row[0], channel: EventChannel(rawValue: row[1]) ?? .api, status: status,
                    reason: (row[3] as String?).flatMap(StatusReason.init(rawValue:)), method: method, count: row[5])
            }
        }
    }
}
