public import CountersignCore
import CountersignStore
public import Foundation
import GRDB

/// What the console watches: running fraud protections, and who requesters
/// prompt most, from where.
extension SQLiteStore {
    public func activeProtections(now: Date, limit: Int) async throws -> [ActiveProtection] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT issuer, client_user_id, until FROM user_protections WHERE until > ?
                    ORDER BY until DESC, issuer, client_user_id LIMIT ?
                    """,
                arguments: [now.timeIntervalSince1970, limit]
            ).map {
                ActiveProtection(
                    issuer: $0["issuer"], clientUserID: $0["client_user_id"],
                    until: Date(timeIntervalSince1970: $0["until"]))
            }
        }
    }

    public func endProtection(issuer: String, clientUserID: String, now: Date, audit record: AuditRecord)
        async throws -> Bool
    {
        try await write { db in
            try db.execute(
                sql: "DELETE FROM user_protections WHERE issuer = ? AND client_user_id = ? AND until > ?",
                arguments: [issuer, clientUserID, now.timeIntervalSince1970])
            guard db.changesCount == 1 else { return false }
            try Self.insert(record, in: db)
            return true
        }
    }

    public func requestCounts(scope: RequestCount.Scope, since: Date, limit: Int) async throws -> [RequestCount] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT key, sum(count) AS total FROM request_counts WHERE scope = ? AND minute >= ?
                    GROUP BY key ORDER BY total DESC, key LIMIT ?
                    """,
                arguments: [scope.rawValue, RequestRate.number(of: since), limit]
            ).map { RequestCount(scope: scope, storedKey: $0["key"], count: $0["total"]) }
        }
    }
}
