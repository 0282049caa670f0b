import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let openIDCases: [Case] = [
        Case(name: "OpenID clients: an app's scopes and client type, set, replaced and removed; not unknown keys") {
            store in
            try await store.insertAPIKey(
                APIKey(id: "ck_app", name: "demo", secretDigest: SecretToken.digest("s"), createdAt: Fixture.t0))
            try check(try await store.openIDClient(apiKeyID: "ck_app") == nil, "none registered at first")
            let confidential = OpenIDClientRegistration(scopes: ["openid", "profile"])
            try await store.setOpenIDClient(confidential, apiKeyID: "ck_app", now: Fixture.t0)
            try check(try await store.openIDClient(apiKeyID: "ck_app") == confidential, "as registered")
            let publicClient = OpenIDClientRegistration(scopes: ["openid", "email"], isPublic: true)
            try await store.setOpenIDClient(publicClient, apiKeyID: "ck_app", now: Fixture.t0 + 1)
            try check(try await store.openIDClient(apiKeyID: "ck_app") == publicClient, "replaced, now public")
            try await store.setOpenIDClient(confidential, apiKeyID: "ck_app", now: Fixture.t0 + 2)
            try check(try await store.openIDClient(apiKeyID: "ck_app") == confidential, "confidential again")
            try await store.setOpenIDClient(nil, apiKeyID: "ck_app", now: Fixture.t0 + 3)
            try check(try await store.openIDClient(apiKeyID: "ck_app") == nil, "removed")
            try await checkThrows(.notFound, "an unknown key") {
                try await store.setOpenIDClient(
                    OpenIDClientRegistration(scopes: ["openid"]), apiKeyID: "ck_unknown", now: Fixture.t0)
            }
        },
        Case(name: "OpenID sign-in: commits with its event; a code spent once, a replay ends it; ending revokes") {
            store in
            _ = try await Fixture.enrolled(in: store)
            let event = Fixture.event()
            let signIn = OpenIDSignIn(
                eventID: event.id, apiKeyID: "ck_app", redirectURI: "https://app.example/cb",
                codeChallenge: String(repeating: "a", count: 43), state: "s", nonce: "n", scope: "openid profile",
                createdAt: Fixture.t0)
            try await store.insertPendingEvent(
                event, by: .backend, limits: PendingLimits(perUser: 3), announcing: [], attached: .signIn(signIn),
                now: Fixture.t0)
            try check(try await store.openIDSignIn(eventID: event.id) == signIn, "stored as given")
            try check(try await store.openIDSignIn(eventID: "ev_other") == nil, "no sign-in for another event")

            // A refused event takes its sign-in with it.
            let refused = Fixture.event()
            var refusedSignIn = signIn
            refusedSignIn.eventID = refused.id
            try await checkThrows(.limitReached(retryAfter: 60), "over the per-user cap") {
                try await store.insertPendingEvent(
                    refused, by: .backend, limits: PendingLimits(perUser: 1), announcing: [],
                    attached: .signIn(refusedSignIn), now: Fixture.t0)
            }
            try check(try await store.openIDSignIn(eventID: refused.id) == nil, "no sign-in without its event")

            try await checkThrows(.notFound, "no code for a sign-in that does not exist") {
                try await store.issueOpenIDCode(eventID: "ev_unknown", digest: Data([1]), expiresAt: Fixture.t0 + 120)
            }
            // A reloaded page asks again: the newer code replaces the older.
            try await store.issueOpenIDCode(eventID: event.id, digest: Data([3]), expiresAt: Fixture.t0 + 120)
            try await store.issueOpenIDCode(eventID: event.id, digest: Data([1, 2]), expiresAt: Fixture.t0 + 120)
            /// The refresh token a redemption would buy, its digest new each time.
            func refreshToken(_ signIn: OpenIDSignIn) -> RefreshTokenRecord {
                RefreshTokenRecord(
                    digest: Data((0..<16).map { _ in UInt8.random(in: 0...255) }), familyID: signIn.family,
                    apiKeyID: "ck_app", identityID: "", createdAt: Fixture.t0, expiresAt: Fixture.t0 + 86400,
                    clientUserID: "alice")
            }
            func redeem(_ digest: [UInt8], at seconds: TimeInterval, confidential: Bool = true) async throws
                -> (OpenIDCodeRule.Verdict, bought: Data)
            {
                let token = refreshToken(signIn)
                let (verdict, _) = try await store.redeemOpenIDCode(
                    eventID: event.id, digest: Data(digest), confidential: confidential, buying: token,
                    now: Fixture.t0 + seconds)
                return (verdict, token.digest)
            }
            let replaced = try await redeem([3], at: 1)
            try check(replaced.0 == .unknown, "the replaced code is unknown")
            try check(try await store.refreshToken(digest: replaced.bought) == nil, "and buys no refresh token")
            try check(
                try await store.redeemOpenIDCode(
                    eventID: "ev_unknown", digest: Data([1, 2]), confidential: false,
                    buying: refreshToken(signIn),
                    now: Fixture.t0
                ).0 == .unknown, "no such sign-in")
            try check(try await redeem([1, 2], at: 120).0 == .expired, "an expired code buys nothing")
            try check(try await store.openIDSignIn(eventID: event.id)?.redeemedAt == nil, "and changes nothing")
            // Two token requests at once: one spends it, the other is a replay.
            async let one = redeem([1, 2], at: 5)
            async let two = redeem([1, 2], at: 5)
            let outcomes = [try await one, try await two]
            let verdicts = outcomes.map(\.0)
            try check(verdicts.contains(.spend) && verdicts.contains(.replayed), "\(verdicts)")
            let spent = try await store.openIDSignIn(eventID: event.id)
            try check(spent?.redeemedAt == Fixture.t0 + 5 && spent?.confidential == true, "marked spent: \(spent!)")
            try check(spent?.endedAt == Fixture.t0 + 5, "the replay ended the sign-in")
            // The spend stored its refresh token with it; the replay revoked it, and bought none.
            for (verdict, bought) in outcomes {
                let stored = try await store.refreshToken(digest: bought)
                try check(
                    verdict == .spend ? stored?.revokedAt == Fixture.t0 + 5 : stored == nil,
                    "\(verdict): \(String(describing: stored))")
            }
            try check(try await redeem([1, 2], at: 6).0 == .replayed, "spent is spent")
            try await checkThrows(.conflict, "no new code once one was spent") {
                try await store.issueOpenIDCode(eventID: event.id, digest: Data([4]), expiresAt: Fixture.t0 + 120)
            }

            // Ending: a second sign-in, its refresh tokens revoked with it.
            let other = Fixture.event()
            var otherSignIn = signIn
            otherSignIn.eventID = other.id
            try await store.insertPendingEvent(
                other, by: .backend, limits: PendingLimits(perUser: 3), announcing: [],
                attached: .signIn(otherSignIn), now: Fixture.t0)
            try await store.issueOpenIDCode(eventID: other.id, digest: Data([5]), expiresAt: Fixture.t0 + 120)
            try check(
                try await store.redeemOpenIDCode(
                    eventID: other.id, digest: Data([5]), confidential: false, buying: refreshToken(otherSignIn),
                    now: Fixture.t0
                )
                .0 == .spend, "spent by a public client")
            try check(try await store.openIDSignIn(eventID: other.id)?.confidential == false, "public")
            try await store.insertRefreshToken(
                RefreshTokenRecord(
                    digest: Data([9]), familyID: otherSignIn.family, apiKeyID: "ck_app", identityID: "",
                    createdAt: Fixture.t0, expiresAt: Fixture.t0 + 86400, clientUserID: "alice"))
            try await store.insertRefreshToken(
                RefreshTokenRecord(
                    digest: Data([8]), familyID: "oidc:ev_other", apiKeyID: "ck_app", identityID: "",
                    createdAt: Fixture.t0, expiresAt: Fixture.t0 + 86400, clientUserID: "alice"))
            try check(try await store.endOpenIDSignIn(eventID: other.id, now: Fixture.t0 + 10), "ended")
            try check(!(try await store.endOpenIDSignIn(eventID: other.id, now: Fixture.t0 + 11)), "ended once")
            try check(!(try await store.endOpenIDSignIn(eventID: "ev_unknown", now: Fixture.t0 + 11)), "unknown")
            try check(
                try await store.openIDSignIn(eventID: other.id)?.endedAt == Fixture.t0 + 10, "the end is kept")
            try check(
                try await store.refreshToken(digest: Data([9]))?.revokedAt == Fixture.t0 + 10, "its tokens revoked")
            try check(
                try await store.refreshToken(digest: Data([8]))?.revokedAt == nil, "another sign-in's tokens live")
            try check(
                try await store.redeemOpenIDCode(
                    eventID: other.id, digest: Data([5]), confidential: false, buying: refreshToken(otherSignIn),
                    now: Fixture.t0 + 12
                )
                .0 == .replayed, "a spent code of an ended sign-in is still a replay")

            // Kept while a refresh token of it lives, then collected.
            _ = try await store.garbageCollect(now: Fixture.t0 + 2 * 86400, eventsEndedBefore: Fixture.t0 + 86400)
            try check(try await store.openIDSignIn(eventID: event.id) == nil, "collected with its tokens gone")
            try check(try await store.openIDSignIn(eventID: other.id) == nil, "both")
        },
        Case(name: "OpenID sign-in: kept while a refresh token of it lives") { store in
            _ = try await Fixture.enrolled(in: store)
            let event = Fixture.event()
            let signIn = OpenIDSignIn(
                eventID: event.id, apiKeyID: "ck_app", redirectURI: "https://app.example/cb",
                codeChallenge: String(repeating: "a", count: 43), state: nil, nonce: nil, scope: "openid",
                createdAt: Fixture.t0)
            try await store.insertPendingEvent(
                event, by: .backend, limits: PendingLimits(perUser: 3), announcing: [], attached: .signIn(signIn),
                now: Fixture.t0)
            try await store.insertRefreshToken(
                RefreshTokenRecord(
                    digest: Data([7]), familyID: signIn.family, apiKeyID: "ck_app", identityID: "",
                    createdAt: Fixture.t0, expiresAt: Fixture.t0 + 40 * 86400, clientUserID: "alice"))
            _ = try await store.garbageCollect(now: Fixture.t0 + 35 * 86400, eventsEndedBefore: Fixture.t0 + 86400)
            try check(try await store.openIDSignIn(eventID: event.id) == signIn, "kept for its refresh token")
        },
    ]
}
