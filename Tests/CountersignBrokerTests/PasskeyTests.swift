import CountersignBroker
import CountersignCore
import CountersignSQLite
import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// A trusted device's passkey, registered and replaced with a device proof
/// whose signing input is the WebAuthn challenge (proto/signing.md §10).
@Suite("passkeys: registering, replacing, removing")
struct PasskeyTests {
    static let path = "/api/v1/devices/self/passkey"

    static let localhost = "http://localhost:8080"

    /// A broker that also answers at http://localhost:8080, its RP ID,
    /// with a webhook endpoint for its app, so that what the app is told
    /// waits in the outbox.
    static func broker() async throws -> TestBroker {
        let broker = try await TestBroker(otherOrigins: ["http://localhost:8080"])
        try await broker.store.insertWebhookEndpoint(
            WebhookEndpoint(
                apiKeyID: broker.apiKeyID, url: "https://app.example.com/hooks", types: [],
                secret: .generate(), createdAt: broker.clock.now))
        return broker
    }

    /// The `data` of each webhook message of `type` in the outbox, oldest first.
    static func webhookData(_ broker: TestBroker, _ type: String) async throws -> [[String: Any]] {
        try await broker.store.outboxMessages(state: nil, limit: 100).reversed().compactMap { message in
            let body = try JSONSerialization.jsonObject(with: message.payload) as? [String: Any]
            return body?["type"] as? String == type ? body?["data"] as? [String: Any] : nil
        }
    }

    /// PUTs what `make` builds for the challenge of this request's proof.
    static func put(
        _ broker: TestBroker, _ client: some TestClientProtocol, _ device: TestDevice,
        _ make: (Data) throws -> [String: AnyEncodable]
    ) async throws -> TestResponse {
        let headers = try await device.proofHeaders(.put, path, now: broker.clock.now)
        let challenge = try PasskeyAssertion.challenge(for: headers[HTTPField.Name("Device-Proof")!]!)
        return try await client.execute(uri: path, method: .put, headers: headers, body: json(try make(challenge)))
    }

    static func body(_ registration: PasskeyRegistration, assertion: PasskeyAssertion? = nil) -> [String: AnyEncodable]
    {
        var body: [String: AnyEncodable] = [
            "credential_id": .init(registration.credentialID), "client_data_json": .init(registration.clientDataJSON),
            "attestation_object": .init(registration.attestationObject),
            "transports": .init(registration.transports ?? []),
        ]
        if let assertion { body["assertion"] = .init(assertion) }
        return body
    }

    @Test("registered for this request's proof: the device list shows it, with its key to pin")
    func register() async throws {
        let broker = try await Self.broker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let authenticator = TestAuthenticator()
            let response = try await Self.put(broker, client, alice.device) {
                Self.body(authenticator.register(challenge: $0))
            }
            #expect(response.status == .ok, "\(String(buffer: response.body))")
            let shown = try #require(try decode(DeviceDocument.self, response).passkey)
            #expect(shown.credentialID == authenticator.credentialIDText)
            #expect(shown.publicKey == DevicePublicKey(authenticator.key.publicKey))
            let stored = try #require(try await broker.store.device(id: alice.device.id)?.passkey)
            #expect(stored.credentialID == authenticator.credentialIDText && stored.transports == ["internal"])
            // The backend sees it in the user's devices.
            let listed = try await client.execute(
                uri: "/api/v1/users/alice/devices", method: .get, headers: broker.backendHeaders)
            #expect(String(buffer: listed.body).contains(authenticator.credentialIDText))
            // The app is told at once, with the key to pin, and the user's
            // device log says who added it.
            let added = try #require(try await Self.webhookData(broker, "device.passkey_added").last)
            let pinned = try #require(added["passkey"] as? [String: Any])
            #expect(pinned["credential_id"] as? String == authenticator.credentialIDText)
            let key = try JSONSerialization.data(withJSONObject: try #require(pinned["public_key"]))
            #expect(try JSONDecoder().decode(DevicePublicKey.self, from: key) == shown.publicKey)
            #expect(added["device_id"] as? String == alice.device.id && added["actor"] as? String == alice.device.id)
            let log = try await client.execute(
                uri: "/api/v1/users/alice/device-changes", method: .get, headers: broker.backendHeaders)
            #expect(String(buffer: log.body).contains(#""action":"passkey_added""#), "\(String(buffer: log.body))")
        }
    }

    @Test(
        "refused, and nothing kept: another request's challenge, another origin, no user verification",
        arguments: ["challenge", "origin", "uv"])
    func refused(_ flaw: String) async throws {
        let broker = try await Self.broker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            var authenticator = TestAuthenticator()
            if flaw == "origin" { authenticator.origin = "https://evil.example" }
            if flaw == "uv" { authenticator.verifiesUser = false }
            let stale = try await alice.device.proofHeaders(.put, Self.path, now: broker.clock.now)
            let response = try await Self.put(broker, client, alice.device) { challenge in
                let signed =
                    flaw == "challenge"
                    ? try PasskeyAssertion.challenge(for: stale[HTTPField.Name("Device-Proof")!]!) : challenge
                return Self.body(authenticator.register(challenge: signed))
            }
            #expect(response.status == .badRequest && errorCode(response) == "invalid_passkey")
            let expected = ["challenge": "wrong_challenge", "origin": "wrong_origin", "uv": "user_not_verified"][flaw]!
            #expect(String(buffer: response.body).contains(expected), "\(String(buffer: response.body))")
            #expect(try await broker.store.device(id: alice.device.id)?.passkey == nil)
        }
    }

    @Test("replacing a passkey takes an assertion of the one in place; one passkey, one device")
    func replace() async throws {
        let broker = try await Self.broker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            var first = TestAuthenticator()
            let registered = try await Self.put(broker, client, alice.device) {
                Self.body(first.register(challenge: $0))
            }
            #expect(registered.status == .ok)
            // Whoever holds the unlocked device, without its owner's passkey.
            let thief = TestAuthenticator()
            let refused = try await Self.put(broker, client, alice.device) { Self.body(thief.register(challenge: $0)) }
            #expect(refused.status == .forbidden && errorCode(refused) == "user_verification_required")
            let forged = try await Self.put(broker, client, alice.device) { challenge in
                var other = TestAuthenticator()
                return Self.body(
                    thief.register(challenge: challenge), assertion: try other.assert(challenge: challenge))
            }
            #expect(forged.status == .badRequest && errorCode(forged) == "invalid_passkey")
            #expect(try await broker.store.device(id: alice.device.id)?.passkey?.credentialID == first.credentialIDText)
            // The owner agrees with the passkey in place.
            let second = TestAuthenticator()
            let replaced = try await Self.put(broker, client, alice.device) { challenge in
                Self.body(second.register(challenge: challenge), assertion: try first.assert(challenge: challenge))
            }
            #expect(replaced.status == .ok, "\(String(buffer: replaced.body))")
            #expect(
                try await broker.store.device(id: alice.device.id)?.passkey?.credentialID == second.credentialIDText)
            // The same credential for another device of the user is refused.
            let laptop = try await broker.enroll(client)
            let again = try await Self.put(broker, client, laptop.device) { Self.body(second.register(challenge: $0)) }
            #expect(again.status == .conflict && errorCode(again) == "passkey_exists")
            // Removing takes the owner too: a thief who could remove it
            // would then register their own without any assertion.
            let stripped = try await client.execute(
                uri: Self.path, method: .delete,
                headers: try await alice.device.proofHeaders(.delete, Self.path, now: broker.clock.now))
            #expect(stripped.status == .forbidden && errorCode(stripped) == "user_verification_required")
            var thiefKey = thief
            let thiefRemoval = try await Self.delete(broker, client, alice.device) {
                try thiefKey.assert(challenge: $0)
            }
            #expect(thiefRemoval.status == .badRequest && errorCode(thiefRemoval) == "invalid_passkey")
            #expect(
                try await broker.store.device(id: alice.device.id)?.passkey?.credentialID == second.credentialIDText)
            var owner = second
            let removed = try await Self.delete(broker, client, alice.device) { try owner.assert(challenge: $0) }
            #expect(removed.status == .ok, "\(String(buffer: removed.body))")
            #expect(try decode(DeviceDocument.self, removed).passkey == nil)
            #expect(try await broker.store.device(id: alice.device.id)?.passkey == nil)
            // Without a passkey there is nothing to prove: answered as it is.
            let none = try await client.execute(
                uri: Self.path, method: .delete,
                headers: try await alice.device.proofHeaders(.delete, Self.path, now: broker.clock.now))
            #expect(none.status == .ok)
            // Told and logged: two added (the first, its replacement), one
            // removed; the refusals and the removal of none left no trace.
            #expect(try await Self.webhookData(broker, "device.passkey_added").count == 2)
            let removal = try await Self.webhookData(broker, "device.passkey_removed")
            #expect(removal.count == 1 && removal.first?["passkey"] == nil)
            let log = try await broker.store.deviceChanges(issuer: broker.apiKeyID, clientUserID: "alice", limit: 10)
            #expect(
                log.filter { $0.deviceID == alice.device.id }.map(\.action) == [
                    .passkeyRemoved, .passkeyAdded, .passkeyAdded, .enrolled,
                ])
        }
    }

    /// DELETEs with an assertion made for the challenge of this request's proof.
    static func delete(
        _ broker: TestBroker, _ client: some TestClientProtocol, _ device: TestDevice,
        _ assert: (Data) throws -> PasskeyAssertion
    ) async throws -> TestResponse {
        let headers = try await device.proofHeaders(.delete, path, now: broker.clock.now)
        let challenge = try PasskeyAssertion.challenge(for: headers[HTTPField.Name("Device-Proof")!]!)
        return try await client.execute(
            uri: path, method: .delete, headers: headers,
            body: json(["assertion": AnyEncodable(try assert(challenge))]))
    }

    @Test("a broker whose public URLs are all addresses has no RP ID, and says so")
    func addressOnly() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let response = try await Self.put(broker, client, alice.device) {
                Self.body(TestAuthenticator().register(challenge: $0))
            }
            #expect(response.status == .serviceUnavailable && errorCode(response) == "passkeys_unavailable")
        }
    }

    /// Alice with a passkey, and a pending event of hers that requires
    /// user verification (no number to type).
    static func protectedEvent(
        _ broker: TestBroker, _ client: some TestClientProtocol, authenticator: TestAuthenticator
    ) async throws -> (TestBroker.Enrolled, InboxItem) {
        let alice = try await broker.enroll(client)
        let registered = try await put(broker, client, alice.device) { body(authenticator.register(challenge: $0)) }
        #expect(registered.status == .ok)
        let created = try await client.execute(
            uri: "/api/v1/events", method: .post, headers: broker.backendHeaders,
            body: json([
                "client_user_id": AnyEncodable("alice"), "details": .init("Pay 500 EUR"),
                "number_matching": .init(false), "user_verification": .init("required"),
            ]))
        #expect(created.status == .created, "\(String(buffer: created.body))")
        let item = try #require(try await broker.inbox(client, alice.device).first)
        #expect(item.event.userVerification == "required")
        return (alice, item)
    }

    static func decide(
        _ broker: TestBroker, _ client: some TestClientProtocol, _ item: InboxItem, _ decision: String,
        assertion: PasskeyAssertion?
    ) async throws -> TestResponse {
        var body: [String: AnyEncodable] = ["decision": .init(decision)]
        if let assertion { body["assertion"] = .init(assertion) }
        return try await client.execute(
            uri: "/api/v1/events/\(item.event.ID)/decision", method: .post,
            headers: [.contentType: "application/json"], body: json(body))
    }

    @Test("required: approved only with the owner verified, by an assertion of this very decision")
    func approval() async throws {
        let broker = try await Self.broker()
        try await broker.test { client in
            var authenticator = TestAuthenticator()
            let (alice, item) = try await Self.protectedEvent(broker, client, authenticator: authenticator)
            let now = broker.clock.now
            // The device key alone: refused, the event still pending.
            let bare = try await Self.decide(
                broker, client, item,
                try await alice.device.decision(on: item, .approve, match: nil, now: now, broker: Self.localhost),
                assertion: nil)
            #expect(bare.status == .forbidden && errorCode(bare) == "user_verification_required")
            // An assertion made for another decision (a rejection of it).
            let rejection = try await alice.device.decision(
                on: item, .reject, match: nil, now: now, broker: Self.localhost)
            let other = try authenticator.assert(challenge: PasskeyAssertion.challenge(for: rejection))
            let approval = try await alice.device.decision(
                on: item, .approve, match: nil, now: now, broker: Self.localhost)
            let misbound = try await Self.decide(broker, client, item, approval, assertion: other)
            #expect(misbound.status == .badRequest && String(buffer: misbound.body).contains("wrong_challenge"))
            // The owner not verified.
            var unverified = authenticator
            unverified.verifiesUser = false
            let noUV = try await Self.decide(
                broker, client, item, approval,
                assertion: try unverified.assert(challenge: PasskeyAssertion.challenge(for: approval)))
            #expect(noUV.status == .badRequest && String(buffer: noUV.body).contains("user_not_verified"))
            #expect(try await broker.store.event(id: item.event.ID)?.storedStatus == .pending)
            // The owner, verified, for this decision.
            let assertion = try authenticator.assert(challenge: PasskeyAssertion.challenge(for: approval))
            let approved = try await Self.decide(broker, client, item, approval, assertion: assertion)
            #expect(approved.status == .ok, "\(String(buffer: approved.body))")
            let document = try decode(EventDocument.self, approved)
            #expect(document.status == .approved && document.assertion == assertion)
            // How: a device key and a passkey that verified its owner, in
            // the document and in the broker-signed token alike.
            #expect(document.acr == ApprovalAuthentication.passkeyACR && document.amr == ["swk", "hwk", "user", "mfa"])
            let fetched = try decode(
                EventDocument.self,
                try await client.execute(
                    uri: "/api/v1/events/\(item.event.ID)", method: .get, headers: broker.backendHeaders))
            #expect(fetched.acr == document.acr && fetched.amr == document.amr)
            let token = try #require(fetched.signature?.split(separator: ".").dropFirst().first)
            let claims = try JSONDecoder().decode(
                EventTokenClaims.self, from: try #require(Base64URL.decode(String(token))))
            #expect(claims.acr == document.acr && claims.amr == document.amr)
            // The app's webhook says how, with the assertion to check.
            let told = try #require(try await Self.webhookData(broker, "event.approved").last)
            #expect(told["ID"] as? String == item.event.ID)
            #expect(told["acr"] as? String == ApprovalAuthentication.passkeyACR)
            #expect(told["amr"] as? [String] == ["swk", "hwk", "user", "mfa"])
            #expect((told["assertion"] as? [String: Any])?["credential_id"] as? String == assertion.credentialID)
            let device = try #require(try await broker.store.device(id: alice.device.id))
            #expect(device.passkey?.signCount == authenticator.signCount, "the counter is kept")

            // A backend checks it later with the keys it pinned, trusting no broker.
            let pinned = try #require(device.passkey.map(PasskeyDocument.init))
            _ = try await DecisionProof.check(
                storedIn: document, app: "demo", pinnedKeys: [alice.device.jwk], broker: Self.localhost,
                pinnedPasskeys: [alice.device.id: [pinned]])
            var stripped = document
            stripped.assertion = nil
            await #expect(throws: ProtocolError(.userNotVerified, "")) {
                try await DecisionProof.check(
                    storedIn: stripped, app: "demo", pinnedKeys: [alice.device.jwk], broker: Self.localhost,
                    pinnedPasskeys: [alice.device.id: [pinned]])
            }
            var swapped = document
            swapped.assertion = misbound.status == .badRequest ? other : assertion
            await #expect(throws: ProtocolError(.wrongChallenge, "")) {
                try await DecisionProof.check(
                    storedIn: swapped, app: "demo", pinnedKeys: [alice.device.jwk], broker: Self.localhost,
                    pinnedPasskeys: [alice.device.id: [pinned]])
            }
            await #expect(throws: ProtocolError(.wrongKey, "")) {
                try await DecisionProof.check(
                    storedIn: document, app: "demo", pinnedKeys: [alice.device.jwk], broker: Self.localhost)
            }
            // A device that replaced its passkey has had several: any of its own proves.
            var earlier = pinned
            earlier.credentialID = "an-earlier-passkey"
            earlier.publicKey = DevicePublicKey(P256.Signing.PrivateKey().publicKey)
            _ = try await DecisionProof.check(
                storedIn: document, app: "demo", pinnedKeys: [alice.device.jwk], broker: Self.localhost,
                pinnedPasskeys: [alice.device.id: [earlier, pinned]])
            await #expect(throws: ProtocolError(.wrongKey, "")) {
                try await DecisionProof.check(
                    storedIn: document, app: "demo", pinnedKeys: [alice.device.jwk], broker: Self.localhost,
                    pinnedPasskeys: [alice.device.id: [earlier]])
            }
            // The passkey pinned for another device proves nothing of this one's decision.
            await #expect(throws: ProtocolError(.wrongKey, "")) {
                try await DecisionProof.check(
                    storedIn: document, app: "demo", pinnedKeys: [alice.device.jwk], broker: Self.localhost,
                    pinnedPasskeys: ["another-device": [pinned]])
            }
        }
    }

    @Test("required: a rejection needs no passkey; a device without one cannot approve")
    func rejectionAndNoPasskey() async throws {
        let broker = try await Self.broker()
        try await broker.test { client in
            let (alice, item) = try await Self.protectedEvent(broker, client, authenticator: TestAuthenticator())
            let laptop = try await broker.enroll(client)
            let refused = try await Self.decide(
                broker, client, item,
                try await laptop.device.decision(on: item, .approve, match: nil, now: broker.clock.now),
                assertion: nil)
            #expect(refused.status == .forbidden && errorCode(refused) == "user_verification_required")
            let rejected = try await Self.decide(
                broker, client, item,
                try await alice.device.decision(on: item, .reject, match: nil, now: broker.clock.now), assertion: nil)
            #expect(rejected.status == .ok)
            #expect(try decode(EventDocument.self, rejected).status == .rejected)
        }
    }

    @Test("a copied passkey gives itself away: its counter does not go up")
    func clonedCounter() async throws {
        let broker = try await Self.broker()
        try await broker.test { client in
            var authenticator = TestAuthenticator()
            let (alice, first) = try await Self.protectedEvent(broker, client, authenticator: authenticator)
            var clone = authenticator
            let approval = try await alice.device.decision(on: first, .approve, match: nil, now: broker.clock.now)
            let used = try await Self.decide(
                broker, client, first, approval,
                assertion: try authenticator.assert(challenge: PasskeyAssertion.challenge(for: approval)))
            #expect(used.status == .ok)
            // The copy, a step behind, signs the next approval.
            _ = try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.backendHeaders,
                body: json([
                    "client_user_id": AnyEncodable("alice"), "number_matching": .init(false),
                    "user_verification": .init("required"),
                ]))
            let next = try #require(try await broker.inbox(client, alice.device).first)
            let again = try await alice.device.decision(on: next, .approve, match: nil, now: broker.clock.now)
            let copied = try await Self.decide(
                broker, client, next, again,
                assertion: try clone.assert(challenge: PasskeyAssertion.challenge(for: again)))
            #expect(copied.status == .badRequest && String(buffer: copied.body).contains("sign_count"))
            #expect(try await broker.store.event(id: next.event.ID)?.storedStatus == .pending)
        }
    }
}
