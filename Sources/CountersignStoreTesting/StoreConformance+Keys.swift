import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let keyCases: [Case] = [
        Case(name: "API keys: insert, read back, duplicate id refused") { store in
            let key = APIKey(id: "ck_one", name: "demo", secretDigest: SecretToken.digest("s"), createdAt: Fixture.t0)
            try await store.insertAPIKey(key)
            try check(try await store.apiKey(id: "ck_one") == key, "the key reads back as written")
            try check(try await store.apiKey(id: "ck_none") == nil, "an unknown id is nil")
            try await checkThrows(.alreadyExists, "duplicate API key") { try await store.insertAPIKey(key) }
            try check(try await store.apiKeys() == [key], "one key listed")
        },
        Case(name: "API keys: read with a device or an event, as apiKey(id:) reads them; none once revoked") { store in
            let key = APIKey(
                id: "ck_app", name: "Demo app", secretDigest: SecretToken.digest("s"), createdAt: Fixture.t0,
                previousSecretDigest: SecretToken.digest("p"), previousSecretExpiresAt: Fixture.t0 + 60,
                userVerification: .discouraged)
            try await store.insertAPIKey(key)
            _ = try await store.putQuorumPolicy(
                QuorumPolicy(
                    issuer: "ck_app", event: "LOGIN", users: ["alice", "bob"], group: nil, requiredApprovals: 2,
                    allowRequester: false, updatedAt: Fixture.t0, updatedVia: "rest"))
            let device = try await Fixture.enrolled(in: store)
            let event = Fixture.event()
            try await store.insertPendingEvent(event, maxPending: 5, now: Fixture.t0)
            let read = try await store.apiKey(id: "ck_app")
            try check(read?.quorumPolicyEvents == ["LOGIN"] && read?.name == "Demo app", "the key as it reads alone")
            let found = try await store.deviceWithAPIKey(id: device.id)
            try check(found?.0 == device && found?.1 == read, "the device with its key: \(String(describing: found))")
            try check(try await store.deviceWithAPIKey(id: "unknown") == nil, "an unknown device is nil")
            let withName = try await store.eventWithAppName(id: event.id)
            try check(withName?.0 == event && withName?.appName == "Demo app", "the event with its app's name")
            try check(try await store.eventWithAppName(id: "ev_unknown") == nil, "an unknown event is nil")
            _ = try await store.revokeAPIKey(
                id: "ck_app", change: APIKeyChange(apiKeyID: "ck_app", action: .revoked, via: "cli", at: Fixture.t0))
            let afterRevocation = try await store.deviceWithAPIKey(id: device.id)
            try check(afterRevocation?.0 == device && afterRevocation?.1 == nil, "a revoked key is none")
            try check(try await store.eventWithAppName(id: event.id)?.appName == nil, "nor has it a name")
        },
        Case(name: "API keys: a rotation keeps the replaced secret until its overlap ends; a second ends it at once") {
            store in
            let key = APIKey(id: "ck_one", name: "demo", secretDigest: SecretToken.digest("s1"), createdAt: Fixture.t0)
            try await store.insertAPIKey(key)
            try await store.insertAPIKey(
                APIKey(id: "ck_two", name: "other", secretDigest: SecretToken.digest("t"), createdAt: Fixture.t0))
            func change(_ action: APIKeyChange.Action, at: Date) -> APIKeyChange {
                APIKeyChange(apiKeyID: "ck_one", action: action, via: "rest", ip: "192.0.2.1", at: at)
            }
            let rotated = try await store.rotateAPIKeySecret(
                id: "ck_one", to: SecretToken.digest("s2"), previousUntil: Fixture.t0 + 100,
                change: change(.rotated, at: Fixture.t0))
            try check(try await store.apiKey(id: "ck_one") == rotated, "the rotated key reads back")
            try check(rotated.secret(SecretToken.digest("s2"), at: Fixture.t0) == .current, "the new secret")
            try check(
                rotated.secret(SecretToken.digest("s1"), at: Fixture.t0 + 99) == .previous(until: Fixture.t0 + 100),
                "the old secret during the overlap")
            try check(rotated.secret(SecretToken.digest("s1"), at: Fixture.t0 + 100) == .refused, "and not after")
            let again = try await store.rotateAPIKeySecret(
                id: "ck_one", to: SecretToken.digest("s3"), previousUntil: Fixture.t0 + 200,
                change: change(.rotated, at: Fixture.t0 + 10))
            try check(
                again.secret(SecretToken.digest("s1"), at: Fixture.t0 + 11) == .refused, "the oldest ends at once")
            try check(again.secret(SecretToken.digest("s2"), at: Fixture.t0 + 11) != .refused, "the last one overlaps")
            let other = try await store.apiKey(id: "ck_two")
            try check(other?.secretDigest == SecretToken.digest("t"), "another key is untouched")
            try await checkThrows(.notFound, "an unknown key") {
                _ = try await store.rotateAPIKeySecret(
                    id: "ck_none", to: SecretToken.digest("x"), previousUntil: Fixture.t0,
                    change: change(.rotated, at: Fixture.t0))
            }
        },
        Case(
            name:
                "API keys: a revoked key is read as none, listed as revoked, and cannot be rotated; its changes are kept"
        ) { store in
            try await store.insertAPIKey(
                APIKey(id: "ck_one", name: "demo", secretDigest: SecretToken.digest("s1"), createdAt: Fixture.t0))
            let created = APIKeyChange(apiKeyID: "ck_one", action: .created, via: "cli", at: Fixture.t0)
            try await store.recordAPIKeyChange(created)
            let revocation = APIKeyChange(
                apiKeyID: "ck_one", action: .revoked, via: "rest", ip: "192.0.2.1", at: Fixture.t0 + 5)
            let revoked = try await store.revokeAPIKey(id: "ck_one", change: revocation)
            try check(revoked.revokedAt == Fixture.t0 + 5, "revoked when the change says")
            try check(try await store.apiKey(id: "ck_one") == nil, "read as none: refused everywhere")
            try check(try await store.apiKeys().map(\.revokedAt) == [Fixture.t0 + 5], "listed, as revoked")
            try await checkThrows(.notFound, "revoked twice") {
                _ = try await store.revokeAPIKey(id: "ck_one", change: revocation)
            }
            try await checkThrows(.notFound, "a revoked key rotated") {
                _ = try await store.rotateAPIKeySecret(
                    id: "ck_one", to: SecretToken.digest("s2"), previousUntil: Fixture.t0 + 9, change: revocation)
            }
            try check(try await store.apiKeyChanges(id: "ck_one") == [created, revocation], "both changes, in order")
        },
        Case(
            name:
                "API keys: the user-verification policy is written at creation, set and audited later, kept by a rotation"
        ) { store in
            try await store.insertAPIKey(
                APIKey(id: "ck_lax", name: "lax", secretDigest: SecretToken.digest("s1"), createdAt: Fixture.t0))
            let strict = APIKey(
                id: "ck_strict", name: "strict", secretDigest: SecretToken.digest("s2"), createdAt: Fixture.t0 + 1,
                userVerification: .required)
            try await store.insertAPIKey(strict)
            try check(try await store.apiKey(id: "ck_lax")?.userVerification == .discouraged, "discouraged by default")
            try check(try await store.apiKey(id: "ck_strict") == strict, "required as created")
            try check(try await store.apiKeys().map(\.userVerification) == [.discouraged, .required], "listed")
            func change(_ policy: UserVerificationPolicy, _ key: String, at: Date) -> APIKeyChange {
                APIKeyChange(apiKeyID: key, action: .setting(policy), via: "rest", ip: "192.0.2.1", at: at)
            }
            let raised = try await store.setUserVerification(
                .required, apiKeyID: "ck_lax", change: change(.required, "ck_lax", at: Fixture.t0 + 5))
            try check(raised.userVerification == .required, "the key after the write says required")
            try check(try await store.apiKey(id: "ck_lax") == raised, "and reads back so")
            try check(
                try await store.apiKey(id: "ck_strict")?.userVerification == .required, "another key is untouched")
            let lowered = try await store.setUserVerification(
                .discouraged, apiKeyID: "ck_strict", change: change(.discouraged, "ck_strict", at: Fixture.t0 + 6))
            try check(try await store.apiKey(id: "ck_strict") == lowered, "lowered, and read back")
            try check(lowered.userVerification == .discouraged, "lowered to discouraged")
            let rotated = try await store.rotateAPIKeySecret(
                id: "ck_lax", to: SecretToken.digest("s3"), previousUntil: Fixture.t0 + 60,
                change: APIKeyChange(apiKeyID: "ck_lax", action: .rotated, via: "cli", at: Fixture.t0 + 7))
            try check(rotated.userVerification == .required, "a rotation keeps the policy")
            try check(
                try await store.apiKeyChanges(id: "ck_lax").map(\.action) == [.userVerificationRequired, .rotated],
                "the setting is audited with the other changes, in order")
            let lowering = change(.discouraged, "ck_strict", at: Fixture.t0 + 6)
            try check(try await store.apiKeyChanges(id: "ck_strict") == [lowering], "with how, from where and when")
            try await checkThrows(.notFound, "an unknown key") {
                _ = try await store.setUserVerification(
                    .required, apiKeyID: "ck_none", change: change(.required, "ck_none", at: Fixture.t0))
            }
            try check(try await store.apiKeyChanges(id: "ck_none").isEmpty, "nothing recorded for it")
            _ = try await store.revokeAPIKey(
                id: "ck_strict",
                change: APIKeyChange(apiKeyID: "ck_strict", action: .revoked, via: "cli", at: Fixture.t0 + 8))
            try await checkThrows(.notFound, "a revoked key") {
                _ = try await store.setUserVerification(
                    .required, apiKeyID: "ck_strict", change: change(.required, "ck_strict", at: Fixture.t0 + 9))
            }
            try check(try await store.apiKeyChanges(id: "ck_strict").count == 2, "the refused setting is not recorded")
            try check(
                try await store.apiKeys().last?.userVerification == .discouraged, "a refused setting changes nothing")
        },
        Case(name: "redirect URLs: replaced as a whole, in order, per API key") { store in
            let key = APIKey(id: "ck_one", name: "demo", secretDigest: SecretToken.digest("s"), createdAt: Fixture.t0)
            try await store.insertAPIKey(key)
            try check(try await store.redirectURLs(apiKeyID: "ck_one") == [], "none at first")
            let urls = ["https://app.example/cb", "http://127.0.0.1/cli", "com.example.app:/done"]
            try await store.setRedirectURLs(urls, apiKeyID: "ck_one")
            try check(try await store.redirectURLs(apiKeyID: "ck_one") == urls, "read back in order")
            try await checkThrows(.alreadyExists, "a URL given twice") {
                try await store.setRedirectURLs(["https://a.example", "https://a.example"], apiKeyID: "ck_one")
            }
            try check(try await store.redirectURLs(apiKeyID: "ck_one") == urls, "a refused update changes nothing")
            try await store.setRedirectURLs(["https://b.example/cb"], apiKeyID: "ck_one")
            try check(try await store.redirectURLs(apiKeyID: "ck_one") == ["https://b.example/cb"], "replaced")
            try await checkThrows(.notFound, "unknown API key") {
                try await store.setRedirectURLs(urls, apiKeyID: "ck_none")
            }
        },
        Case(name: "signing keys: oldest first, duplicate id refused") { store in
            let old = BrokerSigningKey(id: "k1", privateKeyPEM: "pem1", createdAt: Fixture.t0)
            let new = BrokerSigningKey(id: "k0", privateKeyPEM: "pem2", createdAt: Fixture.t0 + 10)
            try await store.insertSigningKey(new)
            try await store.insertSigningKey(old)
            try check(try await store.signingKeys() == [old, new], "keys come oldest first")
            try await checkThrows(.alreadyExists, "duplicate signing key") { try await store.insertSigningKey(old) }
        },
        Case(name: "replay cache: a jti is accepted once per device") { store in
            try await store.consumeProofID("j1", deviceID: "d1", expiresAt: Fixture.t0 + 120, now: Fixture.t0)
            try await checkThrows(.replayed, "replayed jti") {
                try await store.consumeProofID("j1", deviceID: "d1", expiresAt: Fixture.t0 + 120, now: Fixture.t0)
            }
            try await store.consumeProofID("j1", deviceID: "d2", expiresAt: Fixture.t0 + 120, now: Fixture.t0)
        },
        Case(name: "garbage collection: expired replay entries and tokens go, open events stay") { store in
            try await store.consumeProofID("old", deviceID: "d1", expiresAt: Fixture.t0 - 1, now: Fixture.t0)
            try await store.consumeProofID("new", deviceID: "d1", expiresAt: Fixture.t0 + 100, now: Fixture.t0)
            let open = Fixture.event(at: Fixture.t0)
            let ended = Fixture.event(at: Fixture.t0 - 3600)
            try await store.insertEvent(open)
            try await store.insertEvent(ended)
            // Ask for everything ended before a time in the future: open events must stay.
            let removed = try await store.garbageCollect(now: Fixture.t0, eventsEndedBefore: Fixture.t0 + 7200)
            try check(removed == 2, "one replay entry and one event removed, got \(removed)")
            try check(try await store.event(id: open.id) != nil, "an open event survives")
            try check(try await store.event(id: ended.id) == nil, "an ended event is gone")
            try await store.consumeProofID("old", deviceID: "d1", expiresAt: Fixture.t0 + 100, now: Fixture.t0)
            try await checkThrows(.replayed, "an unexpired entry is kept") {
                try await store.consumeProofID("new", deviceID: "d1", expiresAt: Fixture.t0 + 100, now: Fixture.t0)
            }
        },
    ]
}
