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
        let query: PostgresStatement =
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

    public func updateOpenIDSignIn<Outcome: Sendable>(
        eventID: String, _ change: @escaping @Sendable (OpenIDSignIn) throws -> (OpenIDSignInChange, Outcome)
    ) async throws -> (OpenIDSignIn, Outcome) {
        let logger = logger
        // READ COMMITTED: the row lock orders the changes of one sign-in.
        return try await update { db in
            guard let signIn = try await Self.openIDSignIn(eventID: eventID, locking: true, in: db, logger: logger)
            else { throw StoreError(.notFound, "no sign-in for event \(eventID)") }
            let (written, outcome) = try Self.applying { try change(signIn) }
            let after = written.signIn
            try await db.run(
                """
                UPDATE openid_sign_ins
                SET code_digest = \(after.codeDigest), code_expires_at = \(after.codeExpiresAt?.seconds),
                    redeemed_at = \(after.redeemedAt?.seconds), ended_at = \(after.endedAt?.seconds),
                    confidential = \(after.confidential)
                WHERE event_id = \(eventID)
                """, logger: logger)
            if let token = written.storing { try await Self.insert(token, into: db, logger: logger) }
            if signIn.endedAt == nil, let ended = after.endedAt {
                try await db.run(
                    """
                    UPDATE refresh_tokens SET revoked_at = \(ended.seconds)
                    WHERE family_id = \(signIn.family) AND revoked_at IS NULL
                    """, logger: logger)
            }
            return (after, outcome)
        }
    }
}
