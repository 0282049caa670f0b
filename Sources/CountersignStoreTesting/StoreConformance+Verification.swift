import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static func challenge(
        identifier: String = "alice@example.com", ip: String = "192.0.2.1", at: Date = Fixture.t0,
        code: String = "123456"
    ) -> VerificationChallenge {
        let id = VerificationChallenge.newID()
        return VerificationChallenge(
            id: id, apiKeyID: "ck_app", identifierType: .email, identifier: identifier,
            codeDigest: OneTimeCode.digest(code, challengeID: String(id)), codeExpiresAt: at + 300,
            codeChallenge: PKCE.challenge(for: PKCE.newVerifier()), redirectURL: "com.example.app:/done", state: "s",
            nonce: "n-\(id)",
            createdAt: at, userAgent: "Test/1.0", ip: ip)
    }

    static let limits = ChallengeLimits(perIdentifier: 2, perAddress: 3, window: 900)

    static func submit(
        _ store: any CountersignStore, _ challenge: VerificationChallenge, code: String, at: Date,
        authorizationCode: String = "auth"
    ) async throws -> VerificationChallenge {
        try await store.submitCode(
            challengeID: challenge.id, codeDigest: OneTimeCode.digest(code, challengeID: String(challenge.id)),
            authorizationCodeDigest: SecretToken.digest(authorizationCode), authorizationCodeExpiresAt: at + 300,
            maxAttempts: 5, now: at)
    }

    static let verificationCases: [Case] = [
        Case(name: "verification: a challenge reads back; sends are limited per identifier and per address") { store in
            let first = challenge()
            try await store.insertChallenge(first, limits: limits, now: Fixture.t0)
            try check(try await store.challenge(id: first.id) == first, "reads back as written")
            try await store.insertChallenge(challenge(at: Fixture.t0 + 100), limits: limits, now: Fixture.t0 + 100)
            try await checkThrows(.limitReached(retryAfter: 700), "third for one identifier in the window") {
                try await store.insertChallenge(challenge(at: Fixture.t0 + 200), limits: limits, now: Fixture.t0 + 200)
            }
            try await store.insertChallenge(
                challenge(identifier: "bob@example.com"), limits: limits, now: Fixture.t0 + 200)
            try await checkThrows(.limitReached(retryAfter: 700), "fourth from one address") {
                try await store.insertChallenge(
                    challenge(identifier: "carol@example.com"), limits: limits, now: Fixture.t0 + 200)
            }
            try await store.insertChallenge(
                challenge(identifier: "carol@example.com", ip: "192.0.2.2"), limits: limits, now: Fixture.t0 + 200)
            try await store.insertChallenge(challenge(at: Fixture.t0 + 901), limits: limits, now: Fixture.t0 + 901)
        },
        Case(name: "verification: the right code verifies once; wrong codes count; five kill the challenge") { store in
            let good = challenge()
            try await store.insertChallenge(good, limits: limits, now: Fixture.t0)
            let verified = try await submit(store, good, code: "123456", at: Fixture.t0 + 1)
            try check(verified.verifiedAt == Fixture.t0 + 1 && verified.authorizationCodeDigest != nil, "verified")
            try await checkThrows(.conflict, "the code again") {
                try await submit(store, good, code: "123456", at: Fixture.t0 + 2)
            }
            let bad = challenge(identifier: "bob@example.com")
            try await store.insertChallenge(bad, limits: limits, now: Fixture.t0)
            for attempt in 1...5 {
                let after = try await submit(store, bad, code: "000000", at: Fixture.t0 + 1)
                try check(after.failedAttempts == attempt && after.verifiedAt == nil, "failure \(attempt) counted")
            }
            try await checkThrows(.conflict, "the right code after five failures") {
                try await submit(store, bad, code: "123456", at: Fixture.t0 + 2)
            }
            try await checkThrows(.conflict, "a re-send after five failures") {
                try await store.resendCode(
                    challengeID: bad.id, codeDigest: Data(count: 32), codeExpiresAt: Fixture.t0 + 600, maxSends: 3,
                    maxAttempts: 5, now: Fixture.t0 + 2)
            }
        },
        Case(name: "verification: an expired code verifies nothing; a re-send keeps the failure count") { store in
            let c = challenge()
            try await store.insertChallenge(c, limits: limits, now: Fixture.t0)
            _ = try await submit(store, c, code: "000000", at: Fixture.t0 + 1)
            try await checkThrows(.conflict, "after the code's lifetime") {
                try await submit(store, c, code: "123456", at: Fixture.t0 + 300)
            }
            let resent = try await store.resendCode(
                challengeID: c.id, codeDigest: OneTimeCode.digest("654321", challengeID: String(c.id)),
                codeExpiresAt: Fixture.t0 + 700, maxSends: 2, maxAttempts: 5, now: Fixture.t0 + 400)
            try check(resent.sends == 2 && resent.failedAttempts == 1, "sent twice, one failure kept")
            let old = try await submit(store, c, code: "123456", at: Fixture.t0 + 401)
            try check(old.verifiedAt == nil && old.failedAttempts == 2, "the replaced code is a wrong code")
            try await checkThrows(.limitReached(retryAfter: 299), "a third send") {
                try await store.resendCode(
                    challengeID: c.id, codeDigest: Data(count: 32), codeExpiresAt: Fixture.t0 + 800, maxSends: 2,
                    maxAttempts: 5, now: Fixture.t0 + 401)
            }
            try check(try await submit(store, c, code: "654321", at: Fixture.t0 + 402).verifiedAt != nil, "new code")
        },
        Case(name: "verification: an authorization code is redeemed once, before it expires") { store in
            let c = challenge()
            try await store.insertChallenge(c, limits: limits, now: Fixture.t0)
            _ = try await submit(store, c, code: "123456", at: Fixture.t0 + 1, authorizationCode: "auth-1")
            try await checkThrows(.notFound, "a wrong authorization code") {
                try await store.redeemAuthorizationCode(
                    challengeID: c.id, digest: SecretToken.digest("auth-2"), now: Fixture.t0 + 2)
            }
            let redeemed = try await store.redeemAuthorizationCode(
                challengeID: c.id, digest: SecretToken.digest("auth-1"), now: Fixture.t0 + 2)
            try check(redeemed.redeemedAt == Fixture.t0 + 2, "redeemed")
            try await checkThrows(.conflict, "redeemed twice") {
                try await store.redeemAuthorizationCode(
                    challengeID: c.id, digest: SecretToken.digest("auth-1"), now: Fixture.t0 + 3)
            }
            let late = challenge(identifier: "bob@example.com")
            try await store.insertChallenge(late, limits: limits, now: Fixture.t0)
            _ = try await submit(store, late, code: "123456", at: Fixture.t0 + 1, authorizationCode: "auth-3")
            try await checkThrows(.conflict, "after its lifetime") {
                try await store.redeemAuthorizationCode(
                    challengeID: late.id, digest: SecretToken.digest("auth-3"), now: Fixture.t0 + 301)
            }
        },
        Case(name: "identities: one per identifier and app, stable across verifications") { store in
            let first = try await store.verifiedIdentity(
                apiKeyID: "ck_app", type: .email, identifier: "alice@example.com", now: Fixture.t0)
            let again = try await store.verifiedIdentity(
                apiKeyID: "ck_app", type: .email, identifier: "alice@example.com", now: Fixture.t0 + 10)
            try check(again.id == first.id && again.userID == first.userID, "the same identity and user")
            try check(again.createdAt == Fixture.t0 && again.updatedAt == Fixture.t0 + 10, "updated, not recreated")
            try check(try await store.verifiedIdentity(id: first.id) == again, "found by id")
            try check(try await store.verifiedIdentity(id: "unknown") == nil, "an unknown id is nil")
            let otherApp = try await store.verifiedIdentity(
                apiKeyID: "ck_other", type: .email, identifier: "alice@example.com", now: Fixture.t0)
            try check(otherApp.id != first.id && otherApp.userID != first.userID, "another app, another user")
        },
        Case(name: "refresh tokens: stored by digest, revoked by family") { store in
            let family = "family-1"
            for (index, secret) in ["r1", "r2"].enumerated() {
                try await store.insertRefreshToken(
                    RefreshTokenRecord(
                        digest: SecretToken.digest(secret), familyID: family, apiKeyID: "ck_app", identityID: "i",
                        createdAt: Fixture.t0 + Double(index), expiresAt: Fixture.t0 + 3600))
            }
            try await checkThrows(.alreadyExists, "a digest twice") {
                try await store.insertRefreshToken(
                    RefreshTokenRecord(
                        digest: SecretToken.digest("r1"), familyID: "other", apiKeyID: "ck_app", identityID: "i",
                        createdAt: Fixture.t0, expiresAt: Fixture.t0 + 3600))
            }
            try check(try await store.refreshToken(digest: SecretToken.digest("r1"))?.familyID == family, "found")
            try check(try await store.revokeRefreshTokenFamily(family, now: Fixture.t0 + 5) == 2, "both revoked")
            try check(try await store.revokeRefreshTokenFamily(family, now: Fixture.t0 + 6) == 0, "once")
            try check(
                try await store.refreshToken(digest: SecretToken.digest("r2"))?.revokedAt == Fixture.t0 + 5,
                "revocation time kept")
        },
        Case(name: "refresh tokens: rotation replaces a live token; reusing a rotated one revokes the family") {
            store in
            func record(_ secret: String, family: String = "f") -> RefreshTokenRecord {
                RefreshTokenRecord(
                    digest: SecretToken.digest(secret), familyID: family, apiKeyID: "ck_app", identityID: "i",
                    createdAt: Fixture.t0, expiresAt: Fixture.t0 + 3600)
            }
            var first = record("r1", family: "fam")
            first.authTime = Fixture.t0 - 60
            try await store.insertRefreshToken(first)
            let r2 = try await store.rotateRefreshToken(
                digest: SecretToken.digest("r1"), replacement: record("r2", family: "ignored"), now: Fixture.t0 + 1)
            try check(r2.familyID == "fam", "the replacement joins the family")
            try check(r2.authTime == Fixture.t0 - 60, "and keeps the time the user authenticated")
            try check(
                try await store.refreshToken(digest: SecretToken.digest("r2"))?.authTime == Fixture.t0 - 60,
                "as stored")
            try check(
                try await store.refreshToken(digest: SecretToken.digest("r1"))?.rotatedAt == Fixture.t0 + 1,
                "the old one is marked rotated")
            try await checkThrows(.conflict, "reusing the rotated token") {
                try await store.rotateRefreshToken(
                    digest: SecretToken.digest("r1"), replacement: record("r3"), now: Fixture.t0 + 2)
            }
            try check(try await store.refreshToken(digest: SecretToken.digest("r3")) == nil, "no replacement stored")
            try check(
                try await store.refreshToken(digest: SecretToken.digest("r2"))?.revokedAt == Fixture.t0 + 2,
                "the live token of the family is revoked too")
            try await checkThrows(.conflict, "the revoked successor") {
                try await store.rotateRefreshToken(
                    digest: SecretToken.digest("r2"), replacement: record("r4"), now: Fixture.t0 + 3)
            }
            try await checkThrows(.notFound, "an unknown token") {
                try await store.rotateRefreshToken(
                    digest: SecretToken.digest("nope"), replacement: record("r5"), now: Fixture.t0 + 3)
            }
            try await store.insertRefreshToken(record("old", family: "other"))
            try await checkThrows(.notFound, "an expired token") {
                try await store.rotateRefreshToken(
                    digest: SecretToken.digest("old"), replacement: record("r6"), now: Fixture.t0 + 3600)
            }
        },
    ]
}
