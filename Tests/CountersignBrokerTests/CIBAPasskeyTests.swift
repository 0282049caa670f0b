import CountersignBroker
import CountersignCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// A CIBA client asks for the owner to be verified with `acr_values`, and
/// the ID token says how the user was authenticated.
@Suite("CIBA: acr_values asks for a passkey; the ID token says what was done")
struct CIBAPasskeyTests {
    static func authorize(_ broker: TestBroker, _ client: some TestClientProtocol, _ form: String) async throws
        -> TestResponse
    {
        let credentials = Data("\(broker.apiKeyID):\(broker.apiSecret)".utf8).base64EncodedString()
        return try await client.execute(
            uri: "/oauth/bc-authorize", method: .post,
            headers: [.contentType: "application/x-www-form-urlencoded", .authorization: "Basic \(credentials)"],
            body: ByteBuffer(string: form))
    }

    /// A JSON object answer.
    static func object(_ response: TestResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any])
    }

    /// The ID token's claims for `authReqID`, redeemed at the token endpoint.
    static func idToken(_ broker: TestBroker, _ client: some TestClientProtocol, _ authReqID: String) async throws
        -> [String: Any]
    {
        let credentials = Data("\(broker.apiKeyID):\(broker.apiSecret)".utf8).base64EncodedString()
        let response = try await client.execute(
            uri: "/oauth/token", method: .post,
            headers: [.contentType: "application/x-www-form-urlencoded", .authorization: "Basic \(credentials)"],
            body: ByteBuffer(string: "grant_type=urn%3Aopenid%3Aparams%3Agrant-type%3Aciba&auth_req_id=\(authReqID)"))
        #expect(response.status == .ok, "\(String(buffer: response.body))")
        let tokens = try object(response)
        let payload = try #require((tokens["id_token"] as? String)?.split(separator: ".").dropFirst().first)
        let bytes = try #require(Base64URL.decode(String(payload)))
        return try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
    }

    @Test("acr_values naming the passkey class: approved only with the passkey, and the ID token says passkey")
    func passkeyRequested() async throws {
        let broker = try await PasskeyTests.broker()
        try await broker.test { client in
            var authenticator = TestAuthenticator()
            let alice = try await broker.enroll(client)
            let registered = try await PasskeyTests.put(broker, client, alice.device) {
                PasskeyTests.body(authenticator.register(challenge: $0))
            }
            #expect(registered.status == .ok)
            let asked = try await Self.authorize(
                broker, client,
                "scope=openid&login_hint=alice&binding_message=Sign+in&acr_values="
                    + "urn%3Acountersign%3Aacr%3Adevice+urn%3Acountersign%3Aacr%3Apasskey")
            #expect(asked.status == .ok, "\(String(buffer: asked.body))")
            let authReqID = try Self.object(asked)["auth_req_id"] as? String
            let item = try #require(try await broker.inbox(client, alice.device).first)
            #expect(item.event.userVerification == "required")
            #expect(item.event.channel == .ciba)
            let approval = try await alice.device.decision(
                on: item, .approve, match: nil, now: broker.clock.now, broker: PasskeyTests.localhost)
            let keyOnly = try await alice.device.decision(
                on: item, .approve, match: nil, now: broker.clock.now, broker: PasskeyTests.localhost)
            let bare = try await PasskeyTests.decide(broker, client, item, keyOnly, assertion: nil)
            #expect(bare.status == .forbidden && errorCode(bare) == "user_verification_required")
            let approved = try await PasskeyTests.decide(
                broker, client, item, approval,
                assertion: try authenticator.assert(challenge: PasskeyAssertion.challenge(for: approval)))
            #expect(approved.status == .ok, "\(String(buffer: approved.body))")
            let claims = try await Self.idToken(broker, client, try #require(authReqID))
            #expect(claims["acr"] as? String == ApprovalAuthentication.passkeyACR)
            #expect(claims["amr"] as? [String] == ["swk", "hwk", "user", "mfa"])
        }
    }

    @Test("without it, the device's key alone approves, and the ID token says device")
    func deviceOnly() async throws {
        let broker = try await PasskeyTests.broker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let asked = try await Self.authorize(
                broker, client, "scope=openid&login_hint=alice&acr_values=urn%3Acountersign%3Aacr%3Adevice")
            #expect(asked.status == .ok, "\(String(buffer: asked.body))")
            let authReqID = try Self.object(asked)["auth_req_id"] as? String
            let item = try #require(try await broker.inbox(client, alice.device).first)
            #expect(item.event.userVerification == nil)
            let approved = try await PasskeyTests.decide(
                broker, client, item,
                try await alice.device.decision(
                    on: item, .approve, match: nil, now: broker.clock.now, broker: PasskeyTests.localhost),
                assertion: nil)
            #expect(approved.status == .ok, "\(String(buffer: approved.body))")
            let claims = try await Self.idToken(broker, client, try #require(authReqID))
            #expect(
                claims["acr"] as? String == ApprovalAuthentication.deviceACR && claims["amr"] as? [String] == ["swk"])
        }
    }

    @Test("a broker reached only by address has no passkeys: the request is refused as OAuth says, and nothing waits")
    func noRelyingParty() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let asked = try await Self.authorize(
                broker, client, "scope=openid&login_hint=alice&acr_values=urn%3Acountersign%3Aacr%3Apasskey")
            #expect(asked.status == .badRequest && String(buffer: asked.body).contains("invalid_request"))
            #expect(try await broker.inbox(client, alice.device).isEmpty)
        }
    }
}
