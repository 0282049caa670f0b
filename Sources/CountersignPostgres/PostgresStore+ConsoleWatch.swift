public import CountersignCore
import CountersignStore
public import Foundation
import PostgresNIO

/// What the console watches: running fraud protections, and who requesters
/// prompt most, from where.
extension PostgresStore {
    public func activeProtections(now: Date, limit: Int) async throws -> [ActiveProtection] {
        let logger = logger
        return try await read { db in
            try await db.rows(
                """
                SELECT issuer, client_user_id, until FROM user_protections WHERE until > \(now.seconds)
                ORDER BY until DESC, issuer, client_user_id LIMIT \(limit)
                """, logger: logger
            ).map {
                ActiveProtection(
                    issuer: try $0.value("issuer"), clientUserID: try $0.value("client_user_id"),
                    until: try $0.date("until"))
            }
        }
    }

    public func endProtection(issuer: String, clientUserID: String, now: Date, audit record: AuditRecord)
        async throws -> Bool
    {
        let logger = logger
        return try await readCommittedWrite { db in
            // A report committing meanwhile holds the row (FOR UPDATE): the
            // DELETE waits for it and ends the protection it leaves.
            let ended = try await db.run(
                """
                DELETE FROM user_protections
                WHERE issuer = \(issuer) AND client_user_id = \(clientUserID) AND until > \(now.seconds)
                RETURNING 1
                """, logger: logger)
            guard ended == 1 else { return false }
            _ = try await Self.insert(record, in: db, logger: logger)
            return true
        }
    }

    public func requestCounts(scope: RequestCount.Scope, since: Date, limit: Int) async throws -> [RequestCount] {
        let logger = logger
        return try await read { db in
            try await db.rows(
                """
                SELECT key, sum(count)::bigint AS total FROM request_counts
                WHERE scope = \(scope.rawValue) AND minute >= \(RequestRate.number(of: since))
                GROUP BY key ORDER BY total DESC, key LIMIT \(limit)
                """, logger: logger
            ).map {
                RequestCount(
                    scope: scope, storedKey: try $0.value("key"), count: Int(try $0.value("total", as: Int64.self)))
            }
        }
    }
}
