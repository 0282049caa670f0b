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

    public func updateOpenIDSignIn<Outcome: Sendable>(
        eventID: String, _ change: @escaping @Sendable (OpenIDSignIn) throws -> (OpenIDSignInChange, Outcome)
    ) async throws -> (OpenIDSignIn, Outcome) {
        try await write { db in
            guard let signIn = try Self.openIDSignIn(eventID: eventID, in: db) else {
                throw StoreError(.notFound, "no sign-in for event \(eventID)")
            }
            let (update, outcome) = try change(signIn)
            let after = update.signIn
            try db.execute(
                sql: """
                    UPDATE openid_sign_ins SET code_digest = ?, code_expires_at = ?, redeemed_at = ?, ended_at = ?,
                        confidential = ?
                    WHERE event_id = ?
                    """,
                arguments: [
                    after.codeDigest, after.codeExpiresAt?.timeIntervalSince1970,
                    after.redeemedAt?.timeIntervalSince1970, after.endedAt?.timeIntervalSince1970, after.confidential,
                    eventID,
                ])
            if let token = update.storing { try Self.insert(token, into: db) }
            if signIn.endedAt == nil, let ended = after.endedAt {
                try db.execute(
                    sql: "UPDATE refresh_tokens SET revoked_at = ? WHERE family_id = ? AND revoked_at IS NULL",
                    arguments: [ended.timeIntervalSince1970, signIn.family])
            }
            return (after, outcome)
        }
    }
}
