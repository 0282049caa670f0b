public import CountersignCore
import CountersignStore
public import Foundation
import GRDB

extension SQLiteStore {
    public func setOpenIDClient(_ registration: OpenIDClientRegistration?, apiKeyID: String, now: Date) async throws {
        try await write { db in
            try Self.requireUnrevokedKey(apiKeyID, in: db)
            if let registration {
                try db.execute(
                    sql: """
                        INSERT INTO openid_clients (api_key_id, scopes, public_client, updated_at) VALUES (?, ?, ?, ?)
                        ON CONFLICT (api_key_id) DO UPDATE SET scopes = excluded.scopes,
                            public_client = excluded.public_client, updated_at = excluded.updated_at
                        """,
                    arguments: [
                        apiKeyID, registration.scopes.joined(separator: " "), registration.isPublic,
                        now.timeIntervalSince1970,
                    ])
            } else {
                try db.execute(sql: "DELETE FROM openid_clients WHERE api_key_id = ?", arguments: [apiKeyID])
            }
        }
    }

    public func openIDClient(apiKeyID: String) async throws -> OpenIDClientRegistration? {
        try read { db in
            try Row.fetchOne(
                db, sql: "SELECT scopes, public_client FROM openid_clients WHERE api_key_id = ?", arguments: [apiKeyID]
            )
            .map { row in
                OpenIDClientRegistration(
                    scopes: (row["scopes"] as String).split(separator: " ").map(String.init),
                    isPublic: row["public_client"])
            }
        }
    }

    static func insert(_ signIn: OpenIDSignIn, into db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO openid_sign_ins (event_id, api_key_id, redirect_uri, code_challenge, state, nonce, scope,
                    created_at, code_digest, code_expires_at, redeemed_at, ended_at, confidential)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                signIn.eventID, signIn.apiKeyID, signIn.redirectURI, signIn.codeChallenge, signIn.state, signIn.nonce,
                signIn.scope, signIn.createdAt.timeIntervalSince1970, signIn.codeDigest,
                signIn.codeExpiresAt?.timeIntervalSince1970, signIn.redeemedAt?.timeIntervalSince1970,
                signIn.endedAt?.timeIntervalSince1970, signIn.confidential,
            ])
    }

    private static func openIDSignIn(eventID: String, in db: Database) throws -> OpenIDSignIn? {
        try Row.fetchOne(db, sql: "SELECT * FROM openid_sign_ins WHERE event_id = ?", arguments: [eventID]).map {
            OpenIDSignIn(
                eventID: $0["event_id"], apiKeyID: $0["api_key_id"], redirectURI: $0["redirect_uri"],
                codeChallenge: $0["code_challenge"], state: $0["state"], nonce: $0["nonce"], scope: $0["scope"],
                createdAt: Date(timeIntervalSince1970: $0["created_at"]), codeDigest: $0["code_digest"],
                codeExpiresAt: ($0["code_expires_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
                redeemedAt: ($0["redeemed_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
                endedAt: ($0["ended_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
                confidential: $0["confidential"])
        }
    }

    public func openIDSignIn(eventID: String) async throws -> OpenIDSignIn? {
        try read { db in try Self.openIDSignIn(eventID: eventID, in: db) }
    }

    public func issueOpenIDCode(eventID: String, digest: Data, expiresAt: Date) async throws {
        try await write { db in
            guard try Self.openIDSignIn(eventID: eventID, in: db) != nil else {
                throw StoreError(.notFound, "no sign-in for event \(eventID)")
            }
            try db.execute(
                sql: """
                    UPDATE openid_sign_ins SET code_digest = ?, code_expires_at = ?
                    WHERE event_id = ? AND redeemed_at IS NULL AND ended_at IS NULL
                    """, arguments: [digest, expiresAt.timeIntervalSince1970, eventID])
            guard db.changesCount == 1 else { throw StoreError(.conflict, "the sign-in's code was spent") }
        }
    }

    public func redeemOpenIDCode(
        eventID: String, digest: Data, confidential: Bool, refreshToken: RefreshTokenRecord, now: Date
    ) async throws -> (OpenIDCodeRule.Verdict, OpenIDSignIn?) {
        try await write { db in
            var signIn = try Self.openIDSignIn(eventID: eventID, in: db)
            let verdict = OpenIDCodeRule.decide(signIn, digest: digest, now: now)
            switch verdict {
            case .spend:
                try db.execute(
                    sql: "UPDATE openid_sign_ins SET redeemed_at = ?, confidential = ? WHERE event_id = ?",
                    arguments: [now.timeIntervalSince1970, confidential, eventID])
                try Self.insert(refreshToken, into: db)
                signIn?.redeemedAt = now
                signIn?.confidential = confidential
            case .replayed:
                if try Self.end(eventID: eventID, now: now, in: db) { signIn?.endedAt = now }
            case .unknown, .expired, .ended:
                break
            }
            return (verdict, signIn)
        }
    }

    public func endOpenIDSignIn(eventID: String, now: Date) async throws -> Bool {
        try await write { db in try Self.end(eventID: eventID, now: now, in: db) }
    }

    private static func end(eventID: String, now: Date, in db: Database) throws -> Bool {
        try db.execute(
            sql: "UPDATE openid_sign_ins SET ended_at = ? WHERE event_id = ? AND ended_at IS NULL",
            arguments: [now.timeIntervalSince1970, eventID])
        guard db.changesCount == 1 else { return false }
        try db.execute(
            sql: "UPDATE refresh_tokens SET revoked_at = ? WHERE family_id = ? AND revoked_at IS NULL",
            arguments: [now.timeIntervalSince1970, OpenIDSignIn.familyPrefix + eventID])
        return true
    }
}
