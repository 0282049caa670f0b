public import CountersignCore
import CountersignStore
public import Foundation
import PostgresNIO

extension PostgresStore {
    public func insertAPIKey(_ key: APIKey) async throws {
        let logger = logger
        try await write { db in
            try await db.run(
                """
                INSERT INTO api_keys (id, name, secret_digest, created_at, user_verification)
                VALUES (
                    \(key.id), \(key.name), \(key.secretDigest), \(key.createdAt.seconds),
                    \(key.userVerification.rawValue))
                """, logger: logger)
        }
    }

    /// Throws `notFound` unless the key exists and is not revoked: what
    /// every registration under a key checks first, in its write.
    static func requireUnrevokedKey(_ apiKeyID: String, in db: PostgresSession, logger: Logger) async throws {
        guard
            try await db.row("SELECT 1 FROM api_keys WHERE id = \(apiKeyID) AND revoked_at IS NULL", logger: logger)
                != nil
        else { throw StoreError(.notFound, "no such API key") }
    }

    public func apiKey(id: String) async throws -> APIKey? {
        let logger = logger
        return try await read { db in
            // With the names of its events under a quorum policy, so that
            // a new event reads its policy only when there is one.
            try await db.row(
                """
                SELECT api_keys.*, array(SELECT event FROM quorum_policies WHERE issuer = api_keys.id) AS quorum_events
                FROM api_keys WHERE id = \(id) AND revoked_at IS NULL
                """, logger: logger
            ).map { row in
                var key = try Self.apiKey(row: row)
                key.quorumPolicyEvents = Set(try row.value("quorum_events", as: [String].self))
                return key
            }
        }
    }

    public func rotateAPIKeySecret(id: String, to digest: Data, previousUntil: Date, change: APIKeyChange)
        async throws -> APIKey
    {
        try await changeAPIKey(
            """
            UPDATE api_keys SET previous_secret_digest = secret_digest,
                previous_secret_expires_at = \(previousUntil.seconds), secret_digest = \(digest)
            WHERE id = \(id) AND revoked_at IS NULL RETURNING *
            """, change)
    }

    public func revokeAPIKey(id: String, change: APIKeyChange) async throws -> APIKey {
        try await changeAPIKey(
            "UPDATE api_keys SET revoked_at = \(change.at.seconds) WHERE id = \(id) AND revoked_at IS NULL RETURNING *",
            change)
    }

    public func setUserVerification(_ policy: UserVerificationPolicy, apiKeyID: String, change: APIKeyChange)
        async throws -> APIKey
    {
        try await changeAPIKey(
            """
            UPDATE api_keys SET user_verification = \(policy.rawValue)
            WHERE id = \(apiKeyID) AND revoked_at IS NULL RETURNING *
            """, change)
    }

    /// Runs `update` (returning the key) and records `change` in one
    /// transaction; `notFound` when it found no unrevoked key.
    private func changeAPIKey(_ update: PostgresStatement, _ change: APIKeyChange) async throws -> APIKey {
        let logger = logger
        return try await write { db in
            guard let row = try await db.row(update, logger: logger) else {
                throw StoreError(.notFound, "no unrevoked API key \(change.apiKeyID)")
            }
            try await Self.record(change, db, logger: logger)
            return try Self.apiKey(row: row)
        }
    }

    public func recordAPIKeyChange(_ change: APIKeyChange) async throws {
        let logger = logger
        try await write { db in try await Self.record(change, db, logger: logger) }
    }

    private static func record(_ change: APIKeyChange, _ db: PostgresSession, logger: Logger) async throws {
        try await db.run(
            """
            INSERT INTO api_key_changes (api_key_id, action, via, ip, at)
            VALUES (\(change.apiKeyID), \(change.action.rawValue), \(change.via), \(change.ip), \(change.at.seconds))
            """, logger: logger)
    }

    public func apiKeyChanges(id: String) async throws -> [APIKeyChange] {
        let logger = logger
        return try await read { db in
            try await db.rows("SELECT * FROM api_key_changes WHERE api_key_id = \(id) ORDER BY id", logger: logger)
                .map { row in
                    APIKeyChange(
                        apiKeyID: try row.value("api_key_id"),
                        action: APIKeyChange.Action(rawValue: try row.value("action")) ?? .created,
                        via: try row.value("via"), ip: try row.value("ip"), at: try row.date("at"))
                }
        }
    }

    public func apiKeys() async throws -> [APIKey] {
        let logger = logger
        return try await read { db in
            try await db.rows("SELECT * FROM api_keys ORDER BY created_at, id", logger: logger).map {
                try Self.apiKey(row: $0)
            }
        }
    }

    /// A key from its row, or from the columns of a join named with
    /// `prefix` (``prefixedAPIKeyColumns``).
    static func apiKey(row: PostgresRandomAccessRow, prefix: String = "") throws -> APIKey {
        APIKey(
            id: try row.value(prefix + "id"), name: try row.value(prefix + "name"),
            secretDigest: try row.value(prefix + "secret_digest"), createdAt: try row.date(prefix + "created_at"),
            previousSecretDigest: try row.value(prefix + "previous_secret_digest"),
            previousSecretExpiresAt: try row.optionalDate(prefix + "previous_secret_expires_at"),
            revokedAt: try row.optionalDate(prefix + "revoked_at"),
            // A value this broker does not know reads as the stricter policy.
            userVerification: UserVerificationPolicy(rawValue: try row.value(prefix + "user_verification"))
                ?? .required)
    }

    /// The columns ``apiKey(row:prefix:)`` reads, of `api_keys AS k`,
    /// named `key_…`.
    static let prefixedAPIKeyColumns = [
        "id", "name", "secret_digest", "created_at", "previous_secret_digest", "previous_secret_expires_at",
        "revoked_at", "user_verification",
    ].map { "k.\($0) AS key_\($0)" }.joined(separator: ", ")

    public func setRedirectURLs(_ urls: [String], apiKeyID: String) async throws {
        let logger = logger
        try await write { db in
            guard try await db.row("SELECT 1 AS one FROM api_keys WHERE id = \(apiKeyID)", logger: logger) != nil else {
                throw StoreError(.notFound, "no API key \(apiKeyID)")
            }
            try await db.run("DELETE FROM api_key_redirect_urls WHERE api_key_id = \(apiKeyID)", logger: logger)
            for (position, url) in urls.enumerated() {
                try await db.run(
                    "INSERT INTO api_key_redirect_urls (api_key_id, position, url) VALUES (\(apiKeyID), \(position), \(url))",
                    logger: logger)
            }
        }
    }

    public func redirectURLs(apiKeyID: String) async throws -> [String] {
        let logger = logger
        return try await read { db in
            try await db.rows(
                "SELECT url FROM api_key_redirect_urls WHERE api_key_id = \(apiKeyID) ORDER BY position",
                logger: logger
            ).map { try $0.value("url", as: String.self) }
        }
    }

    public func signingKeys() async throws -> [BrokerSigningKey] {
        let logger = logger
        return try await read { db in
            try await db.rows("SELECT * FROM signing_keys ORDER BY created_at, id", logger: logger).map {
                BrokerSigningKey(
                    id: try $0.value("id"), privateKeyPEM: try $0.value("private_key_pem"),
                    createdAt: try $0.date("created_at"))
            }
        }
    }

    public func insertSigningKey(_ key: BrokerSigningKey) async throws {
        let logger = logger
        try await write { db in
            try await db.run(
                """
                INSERT INTO signing_keys (id, private_key_pem, created_at)
                VALUES (\(key.id), \(key.privateKeyPEM), \(key.createdAt.seconds))
                """, logger: logger)
            // Every instance re-reads its keys now rather than at its next refresh.
            db.notify(WakeKey.signingKeys)
        }
    }

    public func consumeProofID(_ jti: String, deviceID: String, expiresAt: Date, now: Date) async throws {
        let spent = try await writeStatement(
            Self.spending(SpentProofID(jti: jti, deviceID: deviceID, expiresAt: expiresAt)))
        guard !spent.isEmpty else { throw StoreError(.replayed, "device \(deviceID) used \(jti) before") }
    }

    /// Records a proof id as used, in a transaction; `replayed` if its
    /// device used it before.
    static func spend(_ id: SpentProofID, in db: PostgresSession, logger: Logger) async throws {
        guard try await db.run(spending(id), logger: logger) == 1 else {
            throw StoreError(.replayed, "device \(id.deviceID) used \(id.jti) before")
        }
    }

    /// The INSERT of a proof id, which returns a row if it was new.
    private static func spending(_ id: SpentProofID) -> PostgresStatement {
        """
        INSERT INTO proof_ids (device_id, jti, expires_at) VALUES (\(id.deviceID), \(id.jti), \(id.expiresAt.seconds))
        ON CONFLICT DO NOTHING RETURNING 1
        """
    }

    public func garbageCollect(now: Date, eventsEndedBefore: Date) async throws -> Int {
        let logger = logger
        return try await write(hold: .maintenance) { db in
            let cutoff = now.seconds
            // Never an event whose window is still open, whatever the caller asks.
            let eventCutoff = min(eventsEndedBefore, now).seconds
            var removed = 0
            for query: PostgresStatement in [
                "DELETE FROM proof_ids WHERE expires_at < \(cutoff) RETURNING 1",
                "DELETE FROM enrollment_tokens WHERE expires_at < \(cutoff) RETURNING 1",
                """
                DELETE FROM request_counts WHERE minute < \(RequestRate.number(of: now - RequestRate.kept))
                RETURNING 1
                """,
                "DELETE FROM events WHERE expires_at < \(eventCutoff) RETURNING 1",
                // An approver's entry goes with its event, whose window it
                // outlasts (a withdrawal or decision ends the event's sooner).
                "DELETE FROM event_approvers WHERE expires_at < \(eventCutoff) RETURNING 1",
                // A CIBA request goes with its event (created before the event's
                // window, at most CIBAPollRule.expiryRange.upperBound long).
                """
                DELETE FROM ciba_requests
                WHERE created_at < \(eventCutoff - Double(CIBAPollRule.expiryRange.upperBound)) RETURNING 1
                """,
                // Kept a day: longer than any code, authorization code or send-limit window.
                "DELETE FROM verification_challenges WHERE created_at < \(cutoff - 86400) RETURNING 1",
                "DELETE FROM refresh_tokens WHERE expires_at < \(cutoff) RETURNING 1",
                """
                DELETE FROM code_failures
                WHERE (locked_until IS NULL OR locked_until <= \(cutoff))
                  AND coalesce(last_attempt_at, 0) < \(cutoff - CodeLimits.failuresKept)
                RETURNING 1
                """,
                "DELETE FROM outbox WHERE state <> 'queued' AND finished_at < \(eventCutoff) RETURNING 1",
                "DELETE FROM user_protections WHERE until < \(now.seconds) RETURNING 1",
                // Kept as long as events: an expired session takes nothing, and
                // its sign-in and sign-out stay in the audit log.
                "DELETE FROM console_sessions WHERE expires_at < \(eventCutoff) RETURNING 1",
                // Kept as long as events, for the console's list: an invitation
                // expired before is long dead (its token went at its expiry).
                "DELETE FROM invitations WHERE expires_at < \(eventCutoff) RETURNING 1",
                // Kept while a refresh token of it lives (their rotations may
                // outlast any fixed time), and a day at least.
                """
                DELETE FROM openid_sign_ins WHERE created_at < \(cutoff - 86400) AND NOT EXISTS (
                    SELECT 1 FROM refresh_tokens WHERE family_id = \(RefreshFamily.signInPrefix) || openid_sign_ins.event_id)
                RETURNING 1
                """,
            ] {
                removed += try await db.run(query, logger: logger)
            }
            return removed
        }
    }
}
