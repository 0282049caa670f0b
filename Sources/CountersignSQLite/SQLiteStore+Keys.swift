public import CountersignCore
import CountersignStore
public import Foundation
import GRDB

extension SQLiteStore {
    public func insertAPIKey(_ key: APIKey) async throws {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO api_keys (id, name, secret_digest, created_at, user_verification)
                    VALUES (?, ?, ?, ?, ?)
                    """,
                arguments: [
                    key.id, key.name, key.secretDigest, key.createdAt.timeIntervalSince1970,
                    key.userVerification.rawValue,
                ])
        }
    }

    public func apiKey(id: String) async throws -> APIKey? {
        try read { db in try Self.apiKey(id: id, in: db) }
    }

    /// An unrevoked key, with the names of its events under a quorum
    /// policy, so that a new event reads its policy only when there is one.
    static func apiKey(id: String, in db: Database) throws -> APIKey? {
        try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT api_keys.*,
                        (SELECT group_concat(event, char(10)) FROM quorum_policies WHERE issuer = api_keys.id)
                            AS quorum_events
                    FROM api_keys WHERE id = ? AND revoked_at IS NULL
                    """), arguments: [id]
        ).map { row in
            var key = APIKey(row: row)
            key.quorumPolicyEvents = Set(
                ((row["quorum_events"] as String?) ?? "").split(separator: "\n").map(String.init))
            return key
        }
    }

    public func rotateAPIKeySecret(id: String, to digest: Data, previousUntil: Date, change: APIKeyChange)
        async throws -> APIKey
    {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE api_keys SET previous_secret_digest = secret_digest, previous_secret_expires_at = ?,
                        secret_digest = ?
                    WHERE id = ? AND revoked_at IS NULL
                    """, arguments: [previousUntil.timeIntervalSince1970, digest, id])
            return try Self.changed(id, change, db)
        }
    }

    public func revokeAPIKey(id: String, change: APIKeyChange) async throws -> APIKey {
        try await write { db in
            try db.execute(
                sql: "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                arguments: [change.at.timeIntervalSince1970, id])
            return try Self.changed(id, change, db)
        }
    }

    public func setUserVerification(_ policy: UserVerificationPolicy, apiKeyID: String, change: APIKeyChange)
        async throws -> APIKey
    {
        try await write { db in
            try db.execute(
                sql: "UPDATE api_keys SET user_verification = ? WHERE id = ? AND revoked_at IS NULL",
                arguments: [policy.rawValue, apiKeyID])
            return try Self.changed(apiKeyID, change, db)
        }
    }

    /// After an update of key `id`: the key, with `change` recorded; or
    /// `notFound` when the update found no unrevoked key.
    private static func changed(_ id: String, _ change: APIKeyChange, _ db: Database) throws -> APIKey {
        guard db.changesCount == 1,
            let key = try Row.fetchOne(db, sql: "SELECT * FROM api_keys WHERE id = ?", arguments: [id])
        else { throw StoreError(.notFound, "no unrevoked API key \(id)") }
        try record(change, db)
        return APIKey(row: key)
    }

    public func recordAPIKeyChange(_ change: APIKeyChange) async throws {
        try await write { db in try Self.record(change, db) }
    }

    private static func record(_ change: APIKeyChange, _ db: Database) throws {
        try db.execute(
            sql: "INSERT INTO api_key_changes (api_key_id, action, via, ip, at) VALUES (?, ?, ?, ?, ?)",
            arguments: [
                change.apiKeyID, change.action.rawValue, change.via, change.ip, change.at.timeIntervalSince1970,
            ])
    }

    public func apiKeyChanges(id: String) async throws -> [APIKeyChange] {
        try read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM api_key_changes WHERE api_key_id = ? ORDER BY id", arguments: [id]
            ).map { row in
                APIKeyChange(
                    apiKeyID: row["api_key_id"], action: APIKeyChange.Action(rawValue: row["action"]) ?? .created,
                    via: row["via"], ip: row["ip"], at: Date(timeIntervalSince1970: row["at"]))
            }
        }
    }

    public func apiKeys() async throws -> [APIKey] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM api_keys ORDER BY created_at, id").map(APIKey.init(row:))
        }
    }

    public func setRedirectURLs(_ urls: [String], apiKeyID: String) async throws {
        try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM api_keys WHERE id = ?", arguments: [apiKeyID]) == true
            else {
                throw StoreError(.notFound, "no API key \(apiKeyID)")
            }
            try db.execute(sql: "DELETE FROM api_key_redirect_urls WHERE api_key_id = ?", arguments: [apiKeyID])
            for (position, url) in urls.enumerated() {
                try db.execute(
                    sql: "INSERT INTO api_key_redirect_urls (api_key_id, position, url) VALUES (?, ?, ?)",
                    arguments: [apiKeyID, position, url])
            }
        }
    }

    public func redirectURLs(apiKeyID: String) async throws -> [String] {
        try read { db in
            try String.fetchAll(
                db, sql: "SELECT url FROM api_key_redirect_urls WHERE api_key_id = ? ORDER BY position",
                arguments: [apiKeyID])
        }
    }

    public func signingKeys() async throws -> [BrokerSigningKey] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM signing_keys ORDER BY created_at, id").map {
                BrokerSigningKey(
                    id: $0["id"], privateKeyPEM: $0["private_key_pem"],
                    createdAt: Date(timeIntervalSince1970: $0["created_at"]))
            }
        }
    }

    public func insertSigningKey(_ key: BrokerSigningKey) async throws {
        try await write { db in
            try db.execute(
                sql: "INSERT INTO signing_keys (id, private_key_pem, created_at) VALUES (?, ?, ?)",
                arguments: [key.id, key.privateKeyPEM, key.createdAt.timeIntervalSince1970])
        }
    }

    public func consumeProofID(_ jti: String, deviceID: String, expiresAt: Date, now: Date) async throws {
        let id = SpentProofID(jti: jti, deviceID: deviceID, expiresAt: expiresAt)
        try await write { db in try Self.spend(id, in: db) }
    }

    /// Records a proof id as used; `replayed` if its device used it before.
    static func spend(_ id: SpentProofID, in db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO proof_ids (device_id, jti, expires_at) VALUES (?, ?, ?)")
            .execute(arguments: [id.deviceID, id.jti, id.expiresAt.timeIntervalSince1970])
        guard db.changesCount == 1 else { throw StoreError(.replayed, "device \(id.deviceID) used \(id.jti) before") }
    }

    /// Throws `notFound` unless the key exists and is not revoked: what
    /// every registration under a key checks first, in its write.
    static func requireUnrevokedKey(_ apiKeyID: String, in db: Database) throws {
        guard
            try Bool.fetchOne(
                db, sql: "SELECT 1 FROM api_keys WHERE id = ? AND revoked_at IS NULL", arguments: [apiKeyID]) != nil
        else { throw StoreError(.notFound, "no such API key") }
    }

    public func garbageCollect(now: Date, eventsEndedBefore: Date) async throws -> Int {
        try await write { db in
            let cutoff = now.timeIntervalSince1970
            try db.execute(sql: "DELETE FROM proof_ids WHERE expires_at < ?", arguments: [cutoff])
            var removed = db.changesCount
            try db.execute(sql: "DELETE FROM enrollment_tokens WHERE expires_at < ?", arguments: [cutoff])
            removed += db.changesCount
            // Never an event whose window is still open, whatever the caller asks.
            try db.execute(
                sql: "DELETE FROM events WHERE expires_at < ?",
                arguments: [min(eventsEndedBefore, now).timeIntervalSince1970])
            removed += db.changesCount
            // An approver's entry goes with its event, whose window it
            // outlasts (a withdrawal or decision ends the event's sooner).
            try db.execute(
                sql: "DELETE FROM event_approvers WHERE expires_at < ?",
                arguments: [min(eventsEndedBefore, now).timeIntervalSince1970])
            removed += db.changesCount
            // A CIBA request goes with its event (created before the event's
            // window, at most CIBAPollRule.expiryRange.upperBound long).
            try db.execute(
                sql: "DELETE FROM ciba_requests WHERE created_at < ?",
                arguments: [
                    min(eventsEndedBefore, now).timeIntervalSince1970 - Double(CIBAPollRule.expiryRange.upperBound)
                ])
            removed += db.changesCount
            try db.execute(
                sql: "DELETE FROM request_counts WHERE minute < ?",
                arguments: [RequestRate.number(of: now - RequestRate.kept)])
            removed += db.changesCount
            // Kept a day: longer than any code, authorization code or send-limit window.
            try db.execute(
                sql: "DELETE FROM verification_challenges WHERE created_at < ?", arguments: [cutoff - 86400])
            removed += db.changesCount
            try db.execute(sql: "DELETE FROM refresh_tokens WHERE expires_at < ?", arguments: [cutoff])
            removed += db.changesCount
            try db.execute(
                sql: """
                    DELETE FROM code_failures
                    WHERE (locked_until IS NULL OR locked_until <= ?) AND coalesce(last_attempt_at, 0) < ?
                    """, arguments: [cutoff, cutoff - CodeLimits.failuresKept])
            removed += db.changesCount
            try db.execute(
                sql: "DELETE FROM outbox WHERE state <> 'queued' AND finished_at < ?",
                arguments: [min(eventsEndedBefore, now).timeIntervalSince1970])
            removed += db.changesCount
            try db.execute(
                sql: "DELETE FROM user_protections WHERE until < ?", arguments: [now.timeIntervalSince1970])
            removed += db.changesCount
            // Kept as long as events: an expired session takes nothing, and
            // its sign-in and sign-out stay in the audit log.
            try db.execute(
                sql: "DELETE FROM console_sessions WHERE expires_at < ?",
                arguments: [min(eventsEndedBefore, now).timeIntervalSince1970])
            removed += db.changesCount
            // Kept as long as events, for the console's list: an invitation
            // expired before is long dead (its token went at its expiry).
            try db.execute(
                sql: "DELETE FROM invitations WHERE expires_at < ?",
                arguments: [min(eventsEndedBefore, now).timeIntervalSince1970])
            removed += db.changesCount
            // Kept while a refresh token of it lives (their rotations may
            // outlast any fixed time), and a day at least.
            try db.execute(
                sql: """
                    DELETE FROM openid_sign_ins WHERE created_at < ? AND NOT EXISTS (
                        SELECT 1 FROM refresh_tokens WHERE family_id = ? || openid_sign_ins.event_id)
                    """, arguments: [cutoff - 86400, RefreshFamily.signInPrefix])
            removed += db.changesCount
            return removed
        }
    }
}

extension APIKey {
    init(row: Row) {
        self.init(
            id: row["id"], name: row["name"], secretDigest: row["secret_digest"],
            createdAt: Date(timeIntervalSince1970: row["created_at"]),
            previousSecretDigest: row["previous_secret_digest"],
            previousSecretExpiresAt: (row["previous_secret_expires_at"] as Double?).map(
                Date.init(timeIntervalSince1970:)),
            revokedAt: (row["revoked_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
            // A value this broker does not know reads as the stricter policy.
            userVerification: UserVerificationPolicy(rawValue: row["user_verification"]) ?? .required)
    }
}
