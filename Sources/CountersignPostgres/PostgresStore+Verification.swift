public import CountersignCore
import CountersignStore
public import Foundation
import PostgresNIO

extension PostgresStore {
    public func insertChallenge(_ challenge: VerificationChallenge, limits: ChallengeLimits, now: Date) async throws {
        let logger = logger
        try await write { db in
            let since = (now - limits.window).seconds
            let recentByIdentifier = try await db.rows(
                """
                SELECT created_at FROM verification_challenges
                WHERE identifier = \(challenge.identifier) AND created_at > \(since) ORDER BY created_at
                """, logger: logger)
            let recentByAddress = try await db.rows(
                """
                SELECT created_at FROM verification_challenges
                WHERE ip = \(challenge.ip) AND created_at > \(since) ORDER BY created_at
                """, logger: logger)
            func dates(_ rows: [PostgresRandomAccessRow]) throws -> [Date] {
                try rows.map { Date(timeIntervalSince1970: try $0.value("created_at", as: Double.self)) }
            }
            try limits.decide(
                recentByIdentifier: try dates(recentByIdentifier), recentByAddress: try dates(recentByAddress), now: now
            ).orThrow()
            try await db.run(
                """
                INSERT INTO verification_challenges (id, api_key_id, identifier_type, identifier, code_digest,
                    code_expires_at, code_challenge, redirect_url, state, created_at, failed_attempts, sends,
                    verified_at, authorization_code_digest, authorization_code_expires_at, redeemed_at, user_agent, ip,
                    nonce)
                VALUES (\(challenge.id), \(challenge.apiKeyID), \(challenge.identifierType.rawValue),
                    \(challenge.identifier), \(challenge.codeDigest), \(challenge.codeExpiresAt.seconds),
                    \(challenge.codeChallenge), \(challenge.redirectURL), \(challenge.state),
                    \(challenge.createdAt.seconds), \(challenge.failedAttempts), \(challenge.sends),
                    \(challenge.verifiedAt?.seconds), \(challenge.authorizationCodeDigest),
                    \(challenge.authorizationCodeExpiresAt?.seconds), \(challenge.redeemedAt?.seconds),
                    \(challenge.userAgent), \(challenge.ip), \(challenge.nonce))
                """, logger: logger)
        }
    }

    public func challenge(id: Int64) async throws -> VerificationChallenge? {
        let logger = logger
        return try await read { db in try await Self.challenge(id: id, in: db, logger: logger) }
    }

    public func resendCode(
        challengeID: Int64, codeDigest: Data, codeExpiresAt: Date, maxSends: Int, maxAttempts: Int, now: Date
    ) async throws -> VerificationChallenge {
        let logger = logger
        return try await write { db in
            let current = try await Self.challenge(id: challengeID, in: db, logger: logger)
            _ = try VerificationRules.resend(current, maxSends: maxSends, maxAttempts: maxAttempts, now: now).orThrow()
            try await db.run(
                """
                UPDATE verification_challenges
                SET code_digest = \(codeDigest), code_expires_at = \(codeExpiresAt.seconds), sends = sends + 1
                WHERE id = \(challengeID)
                """, logger: logger)
            return try await Self.challenge(id: challengeID, in: db, logger: logger)!
        }
    }

    public func submitCode(
        challengeID: Int64, codeDigest: Data, authorizationCodeDigest: Data, authorizationCodeExpiresAt: Date,
        maxAttempts: Int, now: Date
    ) async throws -> VerificationChallenge {
        let logger = logger
        return try await write { db in
            let current = try await Self.challenge(id: challengeID, in: db, logger: logger)
            let step = try VerificationRules.submit(current, codeDigest: codeDigest, maxAttempts: maxAttempts, now: now)
                .orThrow()
            if step == .verify {
                try await db.run(
                    """
                    UPDATE verification_challenges
                    SET verified_at = \(now.seconds), authorization_code_digest = \(authorizationCodeDigest),
                        authorization_code_expires_at = \(authorizationCodeExpiresAt.seconds)
                    WHERE id = \(challengeID)
                    """, logger: logger)
            } else {
                try await db.run(
                    "UPDATE verification_challenges SET failed_attempts = failed_attempts + 1 WHERE id = \(challengeID)",
                    logger: logger)
            }
            return try await Self.challenge(id: challengeID, in: db, logger: logger)!
        }
    }

    public func redeemAuthorizationCode(challengeID: Int64, digest: Data, now: Date) async throws
        -> VerificationChallenge
    {
        let logger = logger
        return try await write { db in
            let current = try await Self.challenge(id: challengeID, in: db, logger: logger)
            _ = try VerificationRules.redeem(current, digest: digest, now: now).orThrow()
            try await db.run(
                "UPDATE verification_challenges SET redeemed_at = \(now.seconds) WHERE id = \(challengeID)",
                logger: logger)
            return try await Self.challenge(id: challengeID, in: db, logger: logger)!
        }
    }

    public func verifiedIdentity(
        apiKeyID: String, type: IdentifierType, identifier: String, now: Date
    ) async throws -> VerifiedIdentity {
        let logger = logger
        return try await write { db in
            let row = try await db.row(
                """
                INSERT INTO verified_identities (id, user_id, api_key_id, identifier_type, identifier, created_at,
                    updated_at)
                VALUES (\(UUID().uuidString.lowercased()), \(UUID().uuidString.lowercased()), \(apiKeyID),
                    \(type.rawValue), \(identifier), \(now.seconds), \(now.seconds))
                ON CONFLICT (api_key_id, identifier_type, identifier) DO UPDATE SET updated_at = excluded.updated_at
                RETURNING *
                """, logger: logger)
            return try Self.identity(row: row!)
        }
    }

    public func verifiedIdentity(id: String) async throws -> VerifiedIdentity? {
        let logger = logger
        return try await read { db in
            try await db.row("SELECT * FROM verified_identities WHERE id = \(id)", logger: logger)
                .map(Self.identity(row:))
        }
    }

    private static func identity(row: PostgresRandomAccessRow) throws -> VerifiedIdentity {
        guard let type = IdentifierType(rawValue: try row.value("identifier_type")) else {
            throw StoreError(.backend, "unreadable identity row")
        }
        return VerifiedIdentity(
            id: try row.value("id"), userID: try row.value("user_id"), apiKeyID: try row.value("api_key_id"),
            identifierType: type, identifier: try row.value("identifier"), createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"))
    }

    public func insertRefreshToken(_ token: RefreshTokenRecord) async throws {
        let logger = logger
        try await write { db in try await Self.insert(token, into: db, logger: logger) }
    }

    static func insert(_ token: RefreshTokenRecord, into db: PostgresSession, logger: Logger) async throws {
        try await db.run(
            """
            INSERT INTO refresh_tokens (digest, family_id, api_key_id, identity_id, created_at, expires_at,
                rotated_at, revoked_at, auth_time, client_user_id, acr)
            VALUES (\(token.digest), \(token.familyID), \(token.apiKeyID), \(token.identityID),
                \(token.createdAt.seconds), \(token.expiresAt.seconds), \(token.rotatedAt?.seconds),
                \(token.revokedAt?.seconds), \(token.authTime?.seconds), \(token.clientUserID), \(token.acr))
            """, logger: logger)
    }

    public func refreshToken(digest: Data) async throws -> RefreshTokenRecord? {
        let logger = logger
        return try await read { db in try await Self.refreshToken(digest: digest, in: db, logger: logger) }
    }

    private static func refreshToken(digest: Data, in db: PostgresSession, logger: Logger) async throws
        -> RefreshTokenRecord?
    {
        try await db.row("SELECT * FROM refresh_tokens WHERE digest = \(digest)", logger: logger).map {
            RefreshTokenRecord(
                digest: try $0.value("digest"), familyID: try $0.value("family_id"),
                apiKeyID: try $0.value("api_key_id"),
                identityID: try $0.value("identity_id"), createdAt: try $0.date("created_at"),
                expiresAt: try $0.date("expires_at"), rotatedAt: try $0.optionalDate("rotated_at"),
                revokedAt: try $0.optionalDate("revoked_at"), authTime: try $0.optionalDate("auth_time"),
                clientUserID: try $0.value("client_user_id"), acr: try $0.value("acr"))
        }
    }

    public func rotateRefreshToken(digest: Data, replacement: RefreshTokenRecord, now: Date) async throws
        -> RefreshTokenRecord
    {
        let logger = logger
        let rotation = try await write { db in
            let rotation = RefreshRotation.decide(
                current: try await Self.refreshToken(digest: digest, in: db, logger: logger),
                replacement: replacement, now: now)
            if case .rotated(let next) = rotation {
                try await db.run(
                    "UPDATE refresh_tokens SET rotated_at = \(now.seconds) WHERE digest = \(digest)", logger: logger)
                try await Self.insert(next, into: db, logger: logger)
            }
            return rotation
        }
        return try await finish(rotation, now: now)
    }

    @discardableResult
    public func revokeRefreshTokenFamily(_ familyID: String, now: Date) async throws -> Int {
        let logger = logger
        return try await write { db in
            try await db.run(
                """
                UPDATE refresh_tokens SET revoked_at = \(now.seconds)
                WHERE family_id = \(familyID) AND revoked_at IS NULL
                RETURNING 1
                """, logger: logger)
        }
    }

    private static func challenge(id: Int64, in db: PostgresSession, logger: Logger) async throws
        -> VerificationChallenge?
    {
        guard let row = try await db.row("SELECT * FROM verification_challenges WHERE id = \(id)", logger: logger)
        else { return nil }
        guard let type = IdentifierType(rawValue: try row.value("identifier_type")) else {
            throw StoreError(.backend, "unreadable verification row")
        }
        return VerificationChallenge(
            id: try row.value("id"), apiKeyID: try row.value("api_key_id"), identifierType: type,
            identifier: try row.value("identifier"), codeDigest: try row.value("code_digest"),
            codeExpiresAt: try row.date("code_expires_at"), codeChallenge: try row.value("code_challenge"),
            redirectURL: try row.value("redirect_url"), state: try row.value("state"), nonce: try row.value("nonce"),
            createdAt: try row.date("created_at"), failedAttempts: try row.value("failed_attempts"),
            sends: try row.value("sends"), verifiedAt: try row.optionalDate("verified_at"),
            authorizationCodeDigest: try row.value("authorization_code_digest"),
            authorizationCodeExpiresAt: try row.optionalDate("authorization_code_expires_at"),
            redeemedAt: try row.optionalDate("redeemed_at"), userAgent: try row.value("user_agent"),
            ip: try row.value("ip"))
    }
}
