public import CountersignCore
import CountersignStore
public import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    static func insert(_ request: CIBARequest, into db: PostgresSession, logger: Logger) async throws {
        try await db.run(
            """
            INSERT INTO ciba_requests (event_id, api_key_id, scope, poll_interval, next_poll_at,
                notification_token, notification_endpoint, auth_req_id, redeemed_at, created_at)
            VALUES (\(request.eventID), \(request.apiKeyID), \(request.scope), \(request.interval),
                \(request.nextPollAt.seconds), \(request.notificationToken), \(request.notificationEndpoint),
                \(request.authRequestID),
                \(request.redeemedAt?.seconds), \(request.createdAt.seconds))
            """, logger: logger)
    }

    private static func cibaRequest(eventID: String, locking: Bool, in db: PostgresSession, logger: Logger)
        async throws -> CIBARequest?
    {
        let query: PostgresStatement =
            locking
            ? "SELECT * FROM ciba_requests WHERE event_id = \(eventID) FOR UPDATE"
            : "SELECT * FROM ciba_requests WHERE event_id = \(eventID)"
        return try await db.row(query, logger: logger).map {
            CIBARequest(
                eventID: try $0.value("event_id"), apiKeyID: try $0.value("api_key_id"), scope: try $0.value("scope"),
                interval: Int(try $0.value("poll_interval", as: Int32.self)), nextPollAt: try $0.date("next_poll_at"),
                notificationToken: try $0.value("notification_token"),
                notificationEndpoint: try $0.value("notification_endpoint"), authRequestID: try $0.value("auth_req_id"),
                redeemedAt: try $0.optionalDate("redeemed_at"), createdAt: try $0.date("created_at"))
        }
    }

    /// What every change that ends an event writes with it for a CIBA
    /// client in ping mode: its notification, in the outbox.
    static func pingCIBAClient(of event: ApprovalEvent, now: Date, in db: PostgresSession, logger: Logger)
        async throws
    {
        guard event.pingsCIBAClient(at: now),
            let ping = try await cibaRequest(eventID: event.id, locking: false, in: db, logger: logger)?.ping(now: now)
        else { return }
        try insert([ping], into: db, logger: logger)
    }

    public func setCIBANotificationEndpoint(_ endpoint: String?, apiKeyID: String, now: Date) async throws {
        let logger = logger
        try await write { db in
            try await Self.requireUnrevokedKey(apiKeyID, in: db, logger: logger)
            if let endpoint {
                try await db.run(
                    """
                    INSERT INTO ciba_clients (api_key_id, notification_endpoint, updated_at)
                    VALUES (\(apiKeyID), \(endpoint), \(now.seconds))
                    ON CONFLICT (api_key_id) DO UPDATE SET notification_endpoint = excluded.notification_endpoint,
                        updated_at = excluded.updated_at
                    """, logger: logger)
            } else {
                try await db.run("DELETE FROM ciba_clients WHERE api_key_id = \(apiKeyID)", logger: logger)
            }
        }
    }

    public func cibaNotificationEndpoint(apiKeyID: String) async throws -> String? {
        let logger = logger
        return try await read { db in
            try await db.row(
                "SELECT notification_endpoint FROM ciba_clients WHERE api_key_id = \(apiKeyID)", logger: logger
            ).map { try $0.value("notification_endpoint") }
        }
    }

    public func cibaRequest(eventID: String) async throws -> CIBARequest? {
        let logger = logger
        return try await read { db in
            try await Self.cibaRequest(eventID: eventID, locking: false, in: db, logger: logger)
        }
    }

    public func updateCIBARequest<Outcome: Sendable>(
        eventID: String, _ change: @escaping @Sendable (CIBARequest, ApprovalEvent) throws -> (CIBARequest?, Outcome)
    ) async throws -> Outcome {
        let logger = logger
        // READ COMMITTED: the request's row lock orders its polls.
        return try await update { db in
            guard let request = try await Self.cibaRequest(eventID: eventID, locking: true, in: db, logger: logger),
                let event = try await db.row("SELECT * FROM events WHERE id = \(eventID)", logger: logger)
                    .map(Self.event(row:))
            else { throw StoreError(.notFound, "no CIBA request for event \(eventID)") }
            let (changed, outcome) = try Self.applying { try change(request, event) }
            guard let next = changed else { return outcome }
            try await db.run(
                """
                UPDATE ciba_requests SET poll_interval = \(Int32(next.interval)),
                    next_poll_at = \(next.nextPollAt.seconds), redeemed_at = \(next.redeemedAt?.seconds)
                WHERE event_id = \(eventID)
                """, logger: logger)
            return outcome
        }
    }
}
