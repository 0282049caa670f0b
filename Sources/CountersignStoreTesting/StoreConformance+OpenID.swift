import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let openIDCases: [Case] = [
        Case(name: "OpenID clients: an app's sign-in scopes, set, replaced and removed; none for unknown keys") {
            store in
            try await store.insertAPIKey(
                APIKey(id: "ck_app", name: "demo", secretDigest: SecretToken.digest("s"), createdAt: Fixture.t0))
            try check(try await store.openIDScopes(apiKeyID: "ck_app") == nil, "none registered at first")
            try await store.setOpenIDScopes(["openid", "profile"], apiKeyID: "ck_app", now: Fixture.t0)
            try check(try await store.openIDScopes(apiKeyID: "ck_app") == ["openid", "profile"], "as registered")
            try await store.setOpenIDScopes(["openid", "email"], apiKeyID: "ck_app", now: Fixture.t0 + 1)
            try check(try await store.openIDScopes(apiKeyID: "ck_app") == ["openid", "email"], "replaced")
            try await store.setOpenIDScopes(nil, apiKeyID: "ck_app", now: Fixture.t0 + 2)
            try check(try await store.openIDScopes(apiKeyID: "ck_app") == nil, "removed")
            try await checkThrows(.notFound, "an unknown key") {
                try await store.setOpenIDScopes(["openid"], apiKeyID: "ck_unknown", now: Fixture.t0)
            }
        },
        Case(name: "OpenID sign-in: commits with its event; one code, spent once; ending revokes its refresh tokens") {
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
            try await store.issueOpenIDCode(eventID: event.id, digest: Data([1, 2]), expiresAt: Fixture.t0 + 120)
            try await checkThrows(.conflict, "a sign-in has one code") {
                try await store.issueOpenIDCode(eventID: event.id, digest: Data([3]), expiresAt: Fixture.t0 + 120)
            }
            try await checkThrows(.notFound, "another code is unknown") {
                _ = try await store.redeemOpenIDCode(eventID: event.id, digest: Data([3]), now: Fixture.t0 + 1)
            }
            try await checkThrows(.conflict, "an expired code buys nothing") {
                _ = try await store.redeemOpenIDCode(eventID: event.id, digest: Data([1, 2]), now: Fixture.t0 + 120)
            }
            // Two token requests at once: one gets the sign-in.
            async let one = Result {
                try await store.redeemOpenIDCode(eventID: event.id, digest: Data([1, 2]), now: Fixture.t0 + 5)
            }
            async let two = Result {
                try await store.redeemOpenIDCode(eventID: event.id, digest: Data([1, 2]), now: Fixture.t0 + 5)
            }
            let spent = [await one, await two].compactMap { try? $0.get() }
            try check(spent.count == 1 && spent.first?.redeemedAt == Fixture.t0 + 5, "spent once: \(spent)")
            try check(
                try await store.openIDSignIn(eventID: event.id)?.redeemedAt == Fixture.t0 + 5, "marked redeemed")

            let family = signIn.family
            try await store.insertRefreshToken(
                RefreshTokenRecord(
                    digest: Data([9]), familyID: family, apiKeyID: "ck_app", identityID: "", createdAt: Fixture.t0,
                    expiresAt: Fixture.t0 + 86400, clientUserID: "alice"))
            try await store.insertRefreshToken(
                RefreshTokenRecord(
                    digest: Data([8]), familyID: "oidc:ev_other", apiKeyID: "ck_app", identityID: "",
                    createdAt: Fixture.t0, expiresAt: Fixture.t0 + 86400, clientUserID: "alice"))
            try check(try await store.endOpenIDSignIn(eventID: event.id, now: Fixture.t0 + 10), "ended")
            try check(!(try await store.endOpenIDSignIn(eventID: event.id, now: Fixture.t0 + 11)), "ended once")
            try check(!(try await store.endOpenIDSignIn(eventID: "ev_unknown", now: Fixture.t0 + 11)), "unknown")
            try check(
                try await store.openIDSignIn(eventID: event.id)?.endedAt == Fixture.t0 + 10, "the end is kept")
            try check(
                try await store.refreshToken(digest: Data([9]))?.revokedAt == Fixture.t0 + 10, "its tokens revoked")
            try check(
                try await store.refreshToken(digest: Data([8]))?.revokedAt == nil, "another sign-in's tokens live")

            // Kept while a refresh token of it lives, then collected.
            _ = try await store.garbageCollect(now: Fixture.t0 + 2 * 86400, eventsEndedBefore: Fixture.t0 + 86400)
            try check(try await store.openIDSignIn(eventID: event.id) == nil, "collected with its tokens gone")
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
