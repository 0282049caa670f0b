public import CountersignCore
import CountersignStore
public import Foundation
import GRDB

extension SQLiteStore {
    public func insertChallenge(_ challenge: VerificationChallenge, limits: ChallengeLimits, now: Date) async throws {
        try await write { db in
            let since = (now - limits.window).timeIntervalSince1970
            func recent(_ column: String, _ value: String) throws -> [Date] {
                try Double.fetchAll(
                    db, sql: "SELECT created_at FROM verification_challenges WHERE \(column) = ? AND created_at > ?",
                    arguments: [value, since]
                ).map(Date.init(timeIntervalSince1970:))
            }
            try limits.decide(
                recentByIdentifier: try recent("identifier", challenge.identifier),
                recentByAddress: try recent("ip", challenge.ip), now: now
            ).orThrow()
            try db.execute(
                sql: """
                    INSERT INTO verification_challenges (id, api_key_id, identifier_type, identifier, code_digest,
                        code_expires_at, code_challenge, redirect_url, state, created_at, failed_attempts, sends,
                        verified_at, authorization_code_digest, authorization_code_expires_at, redeemed_at, user_agent, ip,
                        nonce)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    challenge.id, challenge.apiKeyID, challenge.identifierType.rawValue, challenge.identifier,
                    challenge.codeDigest, challenge.codeExpiresAt.timeIntervalSince1970, challenge.codeChallenge,
                    challenge.redirectURL, challenge.state, challenge.createdAt.timeIntervalSince1970,
                    challenge.failedAttempts, challenge.sends, challenge.verifiedAt?.timeIntervalSince1970,
                    challenge.authorizationCodeDigest, challenge.authorizationCodeExpiresAt?.timeIntervalSince1970,
                    challenge.redeemedAt?.timeIntervalSince1970, challenge.userAgent, challenge.ip, challenge.nonce,
                ])
        }
    }

    public func challenge(id: Int64) async throws -> VerificationChallenge? {
        try read { db in try Self.challenge(id: id, in: db) }
    }

    public func resendCode(
        challengeID: Int64, codeDigest: Data, codeExpiresAt: Date, maxSends: Int, maxAttempts: Int, now: Date
    ) async throws -> VerificationChallenge {
        try await write { db in
            _ = try VerificationRules.resend(
                try Self.challenge(id: challengeID, in: db), maxSends: maxSends, maxAttempts: maxAttempts, now: now
            ).orThrow()
            try db.execute(
                sql: """
                    UPDATE verification_challenges SET code_digest = ?, code_expires_at = ?, sends = sends + 1
                    WHERE id = ?
                    """,
                arguments: [codeDigest, codeExpiresAt.timeIntervalSince1970, challengeID])
            return try Self.challenge(id: challengeID, in: db)!
        }
    }

    public func submitCode(
        challengeID: Int64, codeDigest: Data, authorizationCodeDigest: Data, authorizationCodeExpiresAt: Date,
        maxAttempts: Int, now: Date
    ) async throws -> VerificationChallenge {
        try await write { db in
            let step = try VerificationRules.submit(
                try Self.challenge(id: challengeID, in: db), codeDigest: codeDigest, maxAttempts: maxAttempts, now: now
            ).orThrow()
            if step == .verify {
                try db.execute(
                    sql: """
                        UPDATE verification_challenges
                        SET verified_at = ?, authorization_code_digest = ?, authorization_code_expires_at = ?
                        WHERE id = ?
                        """,
                    arguments: [
                        now.timeIntervalSince1970, authorizationCodeDigest,
                        authorizationCodeExpiresAt.timeIntervalSince1970, challengeID,
                    ])
            } else {
                try db.execute(
                    sql: "UPDATE verification_challenges SET failed_attempts = failed_attempts + 1 WHERE id = ?",
                    arguments: [challengeID])
            }
            return try Self.challenge(id: challengeID, in: db)!
        }
    }

    public func redeemAuthorizationCode(challengeID: Int64, digest: Data, now: Date) async throws
        -> VerificationChallenge
    {
        try await write { db in
            _ = try VerificationRules.redeem(try Self.challenge(id: challengeID, in: db), digest: digest, now: now)
                .orThrow()
            try db.execute(
                sql: "UPDATE verification_challenges SET redeemed_at = ? WHERE id = ?",
                arguments: [now.timeIntervalSince1970, challengeID])
            return try Self.challenge(id: challengeID, in: db)!
        }
    }

    public func verifiedIdentity(
        apiKeyID: String, type: IdentifierType, identifier: String, now: Date
    ) async throws -> VerifiedIdentity {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO verified_identities (id, user_id, api_key_id, identifier_type, identifier, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (api_key_id, identifier_type, identifier) DO UPDATE SET updated_at = excluded.updated_at
                    """,
                arguments: [
                    UUID().uuidString.lowercased(), UUID().uuidString.lowercased(), apiKeyID, type.rawValue, identifier,
                    now.timeIntervalSince1970, now.timeIntervalSince1970,
                ])
            let row = try Row.fetchOne(
                db,
                sql:
                    "SELECT * FROM verified_identities WHERE api_key_id = ? AND identifier_type = ? AND identifier = ?",
                arguments: [apiKeyID, type.rawValue, identifier])!
            return try Self.identity(row: row)
        }
    }

    public func verifiedIdentity(id: String) async throws -> VerifiedIdentity? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM verified_identities WHERE id = ?", arguments: [id])
                .map(Self.identity(row:))
        }
    }

    private static func identity(row: Row) throws -> VerifiedIdentity {
        guard let type = IdentifierType(rawValue: row["identifier_type"]) else {
            throw StoreError(.backend, "unreadable identity row")
        }
        return VerifiedIdentity(
            id: row["id"], userID: row["user_id"], apiKeyID: row["api_key_id"], identifierType: type,
            identifier: row["identifier"], createdAt: Date(timeIntervalSince1970: row["created_at"]),
            updatedAt: Date(timeIntervalSince1970: row["updated_at"]))
    }

    public func insertRefreshToken(_ token: RefreshTokenRecord) async throws {
        try await write { db in try Self.insert(token, into: db) }
    }

    static func insert(_ token: RefreshTokenRecord, into db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO refresh_tokens (digest, family_id, api_key_id, identity_id, created_at, expires_at,
                    rotated_at, revoked_at, auth_time, client_user_id, acr)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                token.digest, token.familyID, token.apiKeyID, token.identityID,
                token.createdAt.timeIntervalSince1970,
                token.expiresAt.timeIntervalSince1970, token.rotatedAt?.timeIntervalSince1970,
                token.revokedAt?.timeIntervalSince1970, token.authTime?.timeIntervalSince1970, token.clientUserID,
                token.acr,
            ])
    }

    public func refreshToken(digest: Data) async throws -> RefreshTokenRecord? {
        try read { db in try Self.refreshToken(digest: digest, in: db) }
    }

    private static func refreshToken(digest: Data, in db: Database) throws -> RefreshTokenRecord? {
        try Row.fetchOne(db, sql: "SELECT * FROM refresh_tokens WHERE digest = ?", arguments: [digest]).map {
            RefreshTokenRecord(
                digest: $0["digest"], familyID: $0["family_id"], apiKeyID: $0["api_key_id"],
                identityID: $0["identity_id"], createdAt: Date(timeIntervalSince1970: $0["created_at"]),
                expiresAt: Date(timeIntervalSince1970: $0["expires_at"]),
                rotatedAt: ($0["rotated_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
                revokedAt: ($0["revoked_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
                authTime: ($0["auth_time"] as Double?).map(Date.init(timeIntervalSince1970:)),
                clientUserID: $0["client_user_id"], acr: $0["acr"])
        }
    }

    public func rotateRefreshToken(digest: Data, replacement: RefreshTokenRecord, now: Date) async throws
        -> RefreshTokenRecord
    {
        let rotation = try await write { db in
            let rotation = RefreshRotation.decide(
                current: try Self.refreshToken(digest: digest, in: db), replacement: replacement, now: now)
            if case .rotated(let next) = rotation {
                try db.execute(
                    sql: "UPDATE refresh_tokens SET rotated_at = ? WHERE digest = ?",
                    arguments: [now.timeIntervalSince1970, digest])
                try Self.insert(next, into: db)
            }
            return rotation
        }
        return try await finish(rotation, now: now)
    }

    @discardableResult
    public func revokeRefreshTokenFamily(_ familyID: String, now: Date) async throws -> Int {
        try await write { db in
            try db.execute(
                sql: "UPDATE refresh_tokens SET revoked_at = ? WHERE family_id = ? AND revoked_at IS NULL",
                arguments: [now.timeIntervalSince1970, familyID])
            return db.changesCount
        }
    }

    private static func challenge(id: Int64, in db: Database) throws -> VerificationChallenge? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM verification_challenges WHERE id = ?", arguments: [id])
        else { return nil }
        guard let type = IdentifierType(rawValue: row["identifier_type"]) else {
            throw StoreError(.backend, "unreadable verification row")
        }
        func date(_ column: String) -> Date? { (row[column] as Double?).map(Date.init(timeIntervalSince1970:)) }
        return VerificationChallenge(
            id: row["id"], apiKeyID: row["api_key_id"], identifierType: type, identifier: row["identifier"],
            codeDigest: row["code_digest"], codeExpiresAt: date("code_expires_at")!,
            codeChallenge: row["code_challenge"],
            redirectURL: row["redirect_url"], state: row["state"], nonce: row["nonce"], createdAt: date("created_at")!,
            failedAttempts: row["failed_attempts"], sends: row["sends"], verifiedAt: date("verified_at"),
            authorizationCodeDigest: row["authorization_code_digest"],
            authorizationCodeExpiresAt: date("authorization_code_expires_at"), redeemedAt: date("redeemed_at"),
            userAgent: row["user_agent"], ip: row["ip"])
    }
}
