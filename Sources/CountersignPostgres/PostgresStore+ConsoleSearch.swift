public import CountersignCore
import CountersignStore
public import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    public func users(prefix: String, after: String?, limit: Int) async throws -> [UserSummary] {
        if UserSummary.findsNobody(prefix: prefix) { return [] }
        let after = UserSummary.position(after: after)
        let logger = logger
        let upper = UserSummary.upperBound(ofPrefix: prefix)
        // A range of `devices_by_user_id`, in byte order whatever the
        // database's collation; no user id is empty, so `> ''` is every one.
        return try await read { db in
            try await db.rows(
                """
                SELECT client_user_id, array_agg(DISTINCT issuer) AS issuers, COUNT(*) AS devices,
                    COUNT(*) FILTER (WHERE revoked_at IS NULL) AS active, MAX(last_seen_at) AS last_seen_at
                FROM devices
                WHERE client_user_id COLLATE "C" >= \(prefix) AND client_user_id COLLATE "C" < \(upper)
                    AND client_user_id COLLATE "C" > \(after ?? "")
                GROUP BY client_user_id ORDER BY client_user_id COLLATE "C" LIMIT \(limit)
                """, logger: logger
            ).map { row in
                UserSummary(
                    clientUserID: try row.value("client_user_id"),
                    issuers: try row.value("issuers", as: [String].self).sorted(),
                    activeDevices: Int(try row.value("active", as: Int64.self)),
                    devices: Int(try row.value("devices", as: Int64.self)),
                    lastSeenAt: try row.optionalDate("last_seen_at"))
            }
        }
    }

    public func searchEvents(_ query: EventQuery, now: Date, limit: Int) async throws -> [ApprovalEvent] {
        if query.findsNothing { return [] }
        let logger = logger
        var filters = PostgresFilters()
        if let issuer = query.issuer { filters.add("issuer = \(filters.bind(issuer))") }
        if let user = query.clientUserID {
            // Across apps, every app named lets `events_by_user` find the
            // user's events, as in SQLite (keys are revoked, never deleted).
            if query.issuer == nil { filters.add("issuer IN (SELECT id FROM api_keys)") }
            filters.add("client_user_id = \(filters.bind(user))")
        }
        switch query.status {
        case nil: break
        case .pending: filters.add("status = 'pending' AND expires_at > \(filters.bind(now.seconds))")
        case .expired: filters.add("status = 'pending' AND expires_at <= \(filters.bind(now.seconds))")
        case .approved, .rejected: filters.add("status = \(filters.bind(query.status!.rawValue))")
        }
        if let name = query.name { filters.add("name = \(filters.bind(name))") }
        if let channel = query.channel { filters.add("channel = \(filters.bind(channel.rawValue))") }
        if let ip = query.ip { filters.add("ip = \(filters.bind(ip))") }
        if let from = query.from { filters.add("created_at >= \(filters.bind(from.seconds))") }
        if let to = query.to { filters.add("created_at < \(filters.bind(to.seconds))") }
        if let after = query.after {
            let t = filters.bind(after.createdAt.timeIntervalSince1970)
            filters.add("(created_at < \(t) OR (created_at = \(t) AND id COLLATE \"C\" < \(filters.bind(after.id))))")
        }
        let limit = filters.bind(limit)
        let statement = filters.select(
            "*", from: "events", then: "ORDER BY created_at DESC, id COLLATE \"C\" DESC LIMIT \(limit)")
        return try await read { db in try await db.rows(statement, logger: logger).map(Self.event(row:)) }
    }

    public func eventTallies(since: Date, now: Date) async throws -> [EventTally] {
        let logger = logger
        return try await read { db in
            try await db.rows(
                """
                SELECT issuer, channel,
                    CASE WHEN status = 'pending' AND expires_at <= \(now.seconds) THEN 'expired' ELSE status END AS state,
                    status_reason, method, COUNT(*) AS count
                FROM events WHERE created_at >= \(since.seconds)
                GROUP BY issuer, channel, state, status_reason, method
                """, logger: logger
            ).map { row in
                guard let status = EventStatus(rawValue: try row.value("state")),
                    let method = AuthMethod(rawValue: try row.value("method"))
                else { throw StoreError(.backend, "unreadable event tally") }
                return EventTally(
                    issuer: try row.value("issuer"),
                    channel: EventChannel(rawValue: try row.value("channel")) ?? .api, status: status,
                    reason: try row.value("status_reason", as: String?.self).flatMap(StatusReason.init(rawValue:)),
                    method: method, count: Int(try row.value("count", as: Int64.self)))
            }
        }
    }
}
