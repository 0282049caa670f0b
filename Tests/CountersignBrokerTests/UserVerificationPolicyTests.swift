import CountersignBroker
import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// An app's policy for all its events (`PATCH /api/v1/apikey`): with
/// `required`, every event made under the key takes a passkey assertion to
/// approve, whoever asked and whatever the request says.
@Suite("API keys: the app's user-verification policy")
struct UserVerificationPolicyTests {
    static let path = "/api/v1/apikey"

    struct Settings: Decodable, Equatable {
        let api_key_id: String
        let name: String
        let user_verification: String
    }

    static func setPolicy(
        _ broker: TestBroker, _ client: some TestClientProtocol, _ policy: String, headers: HTTPFields? = nil
    ) async throws -> TestResponse {
        try await client.execute(
            uri: path, method: .patch, headers: headers ?? broker.backendHeaders,
            body: json(["user_verification": policy]))
    }

    /// Alice, her device with a passkey, under a key whose policy the
    /// backend set to `required`.
    static func strictAlice(
        _ broker: TestBroker, _ client: some TestClientProtocol, authenticator: TestAuthenticator
    ) async throws -> TestBroker.Enrolled {
        let alice = try await broker.enroll(client)
        let registered = try await PasskeyTests.put(broker, client, alice.device) {
            PasskeyTests.body(authenticator.register(challenge: $0))
        }
        #expect(registered.status == .ok, "\(String(buffer: registered.body))")
        let set = try await setPolicy(broker, client, "required")
        #expect(set.status == .ok, "\(String(buffer: set.body))")
        return alice
    }

    @Test("the backend reads and sets its key's policy; bad values and the key id alone are refused; it is audited")
    func rest() async throws {
        let broker = try await PasskeyTests.broker()
        try await broker.test { client in
            let read = try await client.execute(uri: Self.path, method: .get, headers: broker.backendHeaders)
            #expect(read.status == .ok, "\(String(buffer: read.body))")
            #expect(
                try decode(Settings.self, read)
                    == Settings(api_key_id: broker.apiKeyID, name: "demo", user_verification: "discouraged"))
            let set = try await Self.setPolicy(broker, client, "required")
            #expect(set.status == .ok, "\(String(buffer: set.body))")
            #expect(try decode(Settings.self, set).user_verification == "required")
            let reread = try await client.execute(uri: Self.path, method: .get, headers: broker.backendHeaders)
            #expect(try decode(Settings.self, reread).user_verification == "required")
            for body in [#"{"user_verification":"preferred"}"#, #"{"user_verfication":"discouraged"}"#, "{}"] {
                let bad = try await client.execute(
                    uri: Self.path, method: .patch, headers: broker.backendHeaders, body: ByteBuffer(string: body))
                #expect(bad.status == .badRequest, "\(body): \(String(buffer: bad.body))")
            }
            let byID = try await Self.setPolicy(broker, client, "discouraged", headers: broker.appHeaders)
            #expect(byID.status == .unauthorized, "the key id alone, which ships inside apps")
            #expect(try await broker.store.apiKey(id: broker.apiKeyID)?.userVerification == .required)
            let lowered = try await Self.setPolicy(broker, client, "discouraged")
            #expect(lowered.status == .ok)
            #expect(try await broker.store.apiKey(id: broker.apiKeyID)?.userVerification == .discouraged)
        }
        let changes = try await broker.store.apiKeyChanges(id: broker.apiKeyID)
        #expect(changes.map(\.action) == [.userVerificationRequired, .userVerificationDiscouraged])
        #expect(changes.allSatisfy { $0.via == "rest" && $0.ip != nil }, "\(changes)")
    }

    @Test("required needs passkeys: a broker reached only by address refuses it, and keeps the policy")
    func addressOnly() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let refused = try await Self.setPolicy(broker, client, "required")
            #expect(refused.status == .serviceUnavailable && errorCode(refused) == "passkeys_unavailable")
            #expect(try await broker.store.apiKey(id: broker.apiKeyID)?.userVerification == .discouraged)
            let discouraged = try await Self.setPolicy(broker, client, "discouraged")
            #expect(discouraged.status == .ok)
        }
    }

    @Test(
        "under a required key every event requires it, even one asking for discouraged: approval needs the passkey, rejection does not"
    )
    func events() async throws {
        let broker = try await PasskeyTests.broker()
        try await broker.test { client in
            var authenticator = TestAuthenticator()
            let alice = try await Self.strictAlice(broker, client, authenticator: authenticator)
            let created = try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.backendHeaders,
                body: json([
                    "client_user_id": AnyEncodable("alice"), "number_matching": .init(false),
                    "user_verification": .init("discouraged"),
                ]))
            #expect(created.status == .created, "\(String(buffer: created.body))")
            let backend = try decode(EventTicket.self, created)
            #expect(backend.event.userVerification == "required")
            let requester = try await broker.requestLogin(client)
            #expect(requester.event.userVerification == "required", "a requester's, which says nothing")
            let inbox = try await broker.inbox(client, alice.device)
            #expect(inbox.count == 2 && inbox.allSatisfy { $0.event.userVerification == "required" })

            let item = try #require(inbox.first { $0.event.ID == backend.event.ID })
            let now = broker.clock.now
            let bare = try await PasskeyTests.decide(
                broker, client, item, try await alice.device.decision(on: item, .approve, match: nil, now: now),
                assertion: nil)
            #expect(bare.status == .forbidden && errorCode(bare) == "user_verification_required")
            #expect(try await broker.store.event(id: item.event.ID)?.storedStatus == .pending)
            let rejected = try await PasskeyTests.decide(
                broker, client, item, try await alice.device.decision(on: item, .reject, match: nil, now: now),
                assertion: nil)
            #expect(rejected.status == .ok)
            #expect(try decode(EventDocument.self, rejected).status == .rejected)

            let login = try #require(inbox.first { $0.event.ID == requester.event.ID })
            let approval = try await alice.device.decision(
                on: login, .approve, match: requester.matchNumber, now: now)
            let approved = try await PasskeyTests.decide(
                broker, client, login, approval,
                assertion: try authenticator.assert(challenge: PasskeyAssertion.challenge(for: approval)))
            #expect(approved.status == .ok, "\(String(buffer: approved.body))")
            #expect(try await broker.poll(client, requester).status == .approved)

            // Lowered again, each request says.
            #expect(try await Self.setPolicy(broker, client, "discouraged").status == .ok)
            #expect(try await broker.requestLogin(client).event.userVerification == nil)
        }
    }

    @Test("under a required key a pairing requires it too: the pairing code alone adds no device")
    func pairing() async throws {
        let broker = try await PasskeyTests.broker()
        try await broker.test { client in
            var authenticator = TestAuthenticator()
            let alice = try await Self.strictAlice(broker, client, authenticator: authenticator)
            let newcomer = TestDevice()
            let pairings = PairingTests()
            let response = try await pairings.requestPairing(client, broker, newcomer: newcomer)
            #expect(response.status == .created, "\(String(buffer: response.body))")
            let ticket = try decode(EventTicket.self, response)
            #expect(ticket.event.userVerification == "required")
            let item = try #require(try await broker.inbox(client, alice.device).first)
            let decision = try await pairings.pairingDecision(
                alice.device, item, .approve, code: ticket.matchNumber, jkt: newcomer.id, broker: broker)
            let bare = try await PasskeyTests.decide(broker, client, item, decision, assertion: nil)
            #expect(bare.status == .forbidden && errorCode(bare) == "user_verification_required")
            #expect(try await broker.store.device(id: newcomer.id) == nil)
            // A decision's id is spent even when refused: a new one.
            let again = try await pairings.pairingDecision(
                alice.device, item, .approve, code: ticket.matchNumber, jkt: newcomer.id, broker: broker)
            let approved = try await PasskeyTests.decide(
                broker, client, item, again,
                assertion: try authenticator.assert(challenge: PasskeyAssertion.challenge(for: again)))
            #expect(approved.status == .ok, "\(String(buffer: approved.body))")
            #expect(try await broker.store.device(id: newcomer.id) != nil)
        }
    }

    @Test("under a required key a CIBA request requires it too")
    func ciba() async throws {
        let broker = try await PasskeyTests.broker()
        try await broker.test { client in
            let alice = try await Self.strictAlice(broker, client, authenticator: TestAuthenticator())
            let response = try await CIBAPasskeyTests.authorize(
                broker, client, "scope=openid&login_hint=alice&binding_message=Sign+in")
            #expect(response.status == .ok, "\(String(buffer: response.body))")
            let item = try #require(try await broker.inbox(client, alice.device).first)
            #expect(item.event.userVerification == "required")
        }
    }

    /// A trusted device asks for itself.
    static func ownRequest(
        _ broker: TestBroker, _ client: some TestClientProtocol, _ device: TestDevice, _ body: [String: String]
    ) async throws -> TestResponse {
        try await client.execute(
            uri: "/api/v1/events", method: .post,
            headers: try await device.proofHeaders(.post, "/api/v1/events", now: broker.clock.now), body: json(body))
    }

    @Test("a trusted device's own request under a required key stays pending, until approved with the passkey")
    func ownRequestUnderPolicy() async throws {
        let broker = try await PasskeyTests.broker()
        try await broker.test { client in
            var authenticator = TestAuthenticator()
            let alice = try await Self.strictAlice(broker, client, authenticator: authenticator)
            let created = try await Self.ownRequest(
                broker, client, alice.device, ["client_user_id": "alice", "user_verification": "discouraged"])
            #expect(created.status == .created, "\(String(buffer: created.body))")
            let ticket = try decode(EventTicket.self, created)
            #expect(ticket.event.status == .pending && ticket.event.userVerification == "required")
            #expect(ticket.requesterToken != nil && ticket.matchNumber == nil, "collected as any request, no number")
            #expect(try await broker.store.event(id: ticket.event.ID)?.storedStatus == .pending)

            // From its own inbox: the device key alone is refused.
            let item = try #require(try await broker.inbox(client, alice.device).first)
            #expect(item.event.ID == ticket.event.ID && item.event.requesterName == "laptop")
            let bare = try await PasskeyTests.decide(
                broker, client, item,
                try await alice.device.decision(on: item, .approve, match: nil, now: broker.clock.now),
                assertion: nil)
            #expect(bare.status == .forbidden && errorCode(bare) == "user_verification_required")
            let approval = try await alice.device.decision(on: item, .approve, match: nil, now: broker.clock.now)
            let approved = try await PasskeyTests.decide(
                broker, client, item, approval,
                assertion: try authenticator.assert(challenge: PasskeyAssertion.challenge(for: approval)))
            #expect(approved.status == .ok, "\(String(buffer: approved.body))")
            #expect(try await broker.poll(client, ticket).status == .approved)
        }
    }

    @Test("an own request asking for user verification is pending too; one that does not is approved at once")
    func ownRequestPerEvent() async throws {
        let broker = try await PasskeyTests.broker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let asking = try await Self.ownRequest(broker, client, alice.device, ["user_verification": "required"])
            #expect(asking.status == .created, "\(String(buffer: asking.body))")
            let pending = try decode(EventTicket.self, asking).event
            #expect(pending.status == .pending && pending.userVerification == "required")
            let plain = try await Self.ownRequest(broker, client, alice.device, ["user_verification": "discouraged"])
            #expect(plain.status == .created)
            #expect(try decode(EventTicket.self, plain).event.status == .approved)
            let bad = try await Self.ownRequest(broker, client, alice.device, ["user_verification": "always"])
            #expect(bad.status == .badRequest, "\(String(buffer: bad.body))")
        }
    }
}
