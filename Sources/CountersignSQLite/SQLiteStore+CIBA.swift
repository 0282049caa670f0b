public import CountersignCore
import CountersignStore
public import Foundation
import GRDB

extension SQLiteStore {
    static func insert(_ request: CIBARequest, into db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO ciba_requests (event_id, api_key_id, scope, poll_interval, next_poll_at,
                    notification_token, notification_endpoint, auth_req_id, redeemed_at, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                request.eventID, request.apiKeyID, request.scope, request.interval,
                request.nextPollAt.timeIntervalSince1970, request.notificationToken, request.notificationEndpoint,
                request.authRequestID,
                request.redeemedAt?.timeIntervalSince1970, request.createdAt.timeIntervalSince1970,
            ])
    }

    private static func cibaRequest(eventID: String, in db: Database) throws -> CIBARequest? {
        // Cached: every change of an event looks for its CIBA request, and
        // preparing `SELECT *` again each time cost more than the lookup.
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM ciba_requests WHERE event_id = ?"), arguments: [eventID]
        )
        .map {
            CIBARequest(
                eventID: $0["event_id"], apiKeyID: $0["api_key_id"], scope: $0["scope"], interval: $0["poll_interval"],
                nextPollAt: Date(timeIntervalSince1970: $0["next_poll_at"]),
                notificationToken: $0["notification_token"], notificationEndpoint: $0["notification_endpoint"],
                authRequestID: $0["auth_req_id"],
                redeemedAt: ($0["redeemed_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
                createdAt: Date(timeIntervalSince1970: $0["created_at"]))
        }
    }

    /// What every change that ends an event writes with it for a CIBA
    /// client in ping mode: its notification, in the outbox.
    static func pingCIBAClient(of event: ApprovalEvent, now: Date, in db: Database) throws {
        guard event.pingsCIBAClient(at: now), let ping = try cibaRequest(eventID: event.id, in: db)?.ping(now: now)
        else { return }
        try insert([ping], into: db)
    }

    public func setCIBANotificationEndpoint(_ endpoint: String?, apiKeyID: String, now: Date) async throws {
        try await write { db in
            try Self.requireUnrevokedKey(apiKeyID, in: db)
            if let endpoint {
                try db.execute(
                    sql: """
                        INSERT INTO ciba_clients (api_key_id, notification_endpoint, updated_at) VALUES (?, ?, ?)
                        ON CONFLICT (api_key_id) DO UPDATE SET notification_endpoint = excluded.notification_endpoint,
                            updated_at = excluded.updated_at
                        """, arguments: [apiKeyID, endpoint, now.timeIntervalSince1970])
            } else {
                try db.execute(sql: "DELETE FROM ciba_clients WHERE api_key_id = ?", arguments: [apiKeyID])
            }
        }
    }

    public func cibaNotificationEndpoint(apiKeyID: String) async throws -> String? {
        try read { db in
            try String.fetchOne(
                db, sql: "SELECT notification_endpoint FROM ciba_clients WHERE api_key_id = ?", arguments: [apiKeyID])
        }
    }

    public func cibaRequest(eventID: String) async throws -> CIBARequest? {
        try read { db in try Self.cibaRequest(eventID: eventID, in: db) }
    }

    public func updateCIBARequest<Outcome: Sendable>(
        eventID: String, _ change: @escaping @Sendable (CIBARequest, ApprovalEvent) throws -> (CIBARequest?, Outcome)
    ) async throws -> Outcome {
        try await write { db in
            guard let request = try Self.cibaRequest(eventID: eventID, in: db),
                let event = try Self.event(id: eventID, in: db)
            else { throw StoreError(.notFound, "no CIBA request for event \(eventID)") }
            let (changed, outcome) = try change(request, event)
            guard let next = changed else { return outcome }
            try db.execute(
                sql: "UPDATE ciba_requests SET poll_interval = ?, next_poll_at = ?, redeemed_at = ? WHERE event_id = ?",
                arguments: [
                    next.interval, next.nextPollAt.timeIntervalSince1970, next.redeemedAt?.timeIntervalSince1970,
                    eventID,
                ])
            return outcome
        }
    }
}
