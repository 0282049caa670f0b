public import CountersignCore
import CountersignStore
public import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    public func setOpenIDClient(_ registration: OpenIDClientRegistration?, apiKeyID: String, now: Date) async throws {
        let logger = logger
        try await write { db in
            try await Self.requireUnrevokedKey(apiKeyID, in: db, logger: logger)
            if let registration {
                try await db.run(
                    """
                    INSERT INTO openid_clients (api_key_id, scopes, public_client, updated_at)
                    VALUES (\(apiKeyID), \(registration.scopes.joined(separator: " ")), \(registration.isPublic),
                        \(now.seconds))
                    ON CONFLICT (api_key_id) DO UPDATE SET scopes = excluded.scopes,
                        public_client = excluded.public_client, updated_at = excluded.updated_at
                    """, logger: logger)
            } else {
                try await db.run("DELETE FROM openid_clients WHERE api_key_id = \(apiKeyID)", logger: logger)
            }
        }
    }

    public func openIDClient(apiKeyID: String) async throws -> OpenIDClientRegistration? {
        let logger = logger
        return try await read { db in
            try await db.row(
                "SELECT scopes, public_client FROM openid_clients WHERE api_key_id = \(apiKeyID)", logger: logger
            )
            .map { row in
                OpenIDClientRegistration(
                    scopes: try row.value("scopes", as: String.self).split(separator: " ").map(String.init),
                    isPublic: try row.value("public_client", as: Bool.self))
            }
        }
    }

    static func insert(_ signIn: OpenIDSignIn, into db: PostgresSession, logger: Logger) async throws {
        try await db.run(
            """
            INSERT INTO openid_sign_ins (event_id, api_key_id, redirect_uri, code_challenge, state, nonce, scope,
                created_at, code_digest, code_expires_at, redeemed_at, ended_at, confidential)
            VALUES (\(signIn.eventID), \(signIn.apiKeyID), \(signIn.redirectURI), \(signIn.codeChallenge),
                \(signIn.state), \(signIn.nonce), \(signIn.scope), \(signIn.createdAt.seconds), \(signIn.codeDigest),
                \(signIn.codeExpiresAt?.seconds), \(signIn.redeemedAt?.seconds), \(signIn.endedAt?.seconds),
                \(signIn.confidential))
            """, logger: logger)
    }

    private static func openIDSignIn(eventID: String, locking: Bool, in db: PostgresSession, logger: Logger)
        async throws -> OpenIDSignIn?
    {
        let query: PostgresQuery =
            locking
            ? "SELECT * FROM openid_sign_ins WHERE event_id = \(eventID) FOR UPDATE"
            : "SELECT * FROM openid_sign_ins WHERE event_id = \(eventID)"
        return try await db.row(query, logger: logger).map {
            OpenIDSignIn(
                eventID: try $0.value("event_id"), apiKeyID: try $0.value("api_key_id"),
                redirectURI: try $0.value("redirect_uri"), codeChallenge: try $0.value("code_challenge"),
                state: try $0.value("state"), nonce: try $0.value("nonce"), scope: try $0.value("scope"),
                createdAt: try $0.date("created_at"), codeDigest: try $0.value("code_digest"),
                codeExpiresAt: try $0.optionalDate("code_expires_at"), redeemedAt: try $0.optionalDate("redeemed_at"),
                endedAt: try $0.optionalDate("ended_at"), confidential: try $0.value("confidential"))
        }
    }

    public func openIDSignIn(eventID: String) async throws -> OpenIDSignIn? {
        let logger = logger
        return try await read { db in
            try await Self.openIDSignIn(eventID: eventID, locking: false, in: db, logger: logger)
        }
    }

    public func issueOpenIDCode(eventID: String, digest: Data, expiresAt: Date) async throws {
        let logger = logger
        try await write { db in
            guard try await Self.openIDSignIn(eventID: eventID, locking: true, in: db, logger: logger) != nil else {
                throw StoreError(.notFound, "no sign-in for event \(eventID)")
            }
            let updated = try await db.run(
                """
                UPDATE openid_sign_ins SET code_digest = \(digest), code_expires_at = \(expiresAt.seconds)
                WHERE event_id = \(eventID) AND redeemed_at IS NULL AND ended_at IS NULL RETURNING 1
                """, logger: logger)
            guard updated == 1 else { throw StoreError(.conflict, "the sign-in's code was spent") }
        }
    }

    public func redeemOpenIDCode(
        eventID: String, digest: Data, confidential: Bool, refreshToken: RefreshTokenRecord, now: Date
    ) async throws -> (OpenIDCodeRule.Verdict, OpenIDSignIn?) {
        let logger = logger
        return try await write { db in
            var signIn = try await Self.openIDSignIn(eventID: eventID, locking: true, in: db, logger: logger)
            let verdict = OpenIDCodeRule.decide(signIn, digest: digest, now: now)
            switch verdict {
            case .spend:
                try await db.run(
                    """
                    UPDATE openid_sign_ins SET redeemed_at = \(now.seconds), confidential = \(confidential)
                    WHERE event_id = \(eventID)
                    """, logger: logger)
                try await Self.insert(refreshToken, into: db, logger: logger)
                signIn?.redeemedAt = now
                signIn?.confidential = confidential
            case .replayed:
                if try await Self.end(eventID: eventID, now: now, in: db, logger: logger) { signIn?.endedAt = now }
            case .unknown, .expired, .ended:
                break
            }
            return (verdict, signIn)
        }
    }

    public func endOpenIDSignIn(eventID: String, now: Date) async throws -> Bool {
        let logger = logger
        return try await write { db in try await Self.end(eventID: eventID, now: now, in: db, logger: logger) }
    }

    private static func end(eventID: String, now: Date, in db: PostgresSession, logger: Logger) async throws -> Bool {
        let ended = try await db.run(
            """
            UPDATE openid_sign_ins SET ended_at = \(now.seconds)
            WHERE event_id = \(eventID) AND ended_at IS NULL RETURNING 1
            """, logger: logger)
        guard ended == 1 else { return false }
        try await db.run(
            """
            UPDATE refresh_tokens SET revoked_at = \(now.seconds)
            WHERE family_id = \(OpenIDSignIn.familyPrefix + eventID) AND revoked_at IS NULL
            """, logger: logger)
        return true
    }
}
