import CountersignBroker
import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// The console's sign-in and session over the router, on the broker's
/// hand-moved clock: what only time shows.
@Suite("console sessions over the router")
struct ConsoleSessionTests {
    /// alice, an operator with a device at the console's app.
    static func console(userVerification: UserVerificationPolicy = .discouraged) async throws -> (
        TestBroker, TestBroker
    ) {
        let broker = try await PasskeyTests.broker()
        try await broker.store.insertAPIKey(
            APIKey(
                id: ConsoleApp.apiKeyID, name: ConsoleApp.name,
                secretDigest: SecretToken.digest(SecretToken.generate()), createdAt: broker.clock.now,
                userVerification: userVerification))
        try await broker.store.addOperator(
            Operator(name: "alice", addedAt: broker.clock.now),
            audit: AuditRecord(at: broker.clock.now, actor: AuditRecord.host, action: .operatorAdded, target: "alice"))
        return (broker, TestBroker(sharing: broker, apiKeyID: ConsoleApp.apiKeyID, apiSecret: ""))
    }

    /// A token for alice's device, as `device-broker operator add` issues it
    /// (the console's app takes no secret to ask for one).
    static func token(_ console: TestBroker) async throws -> String {
        let token = "et_" + SecretToken.generate(bytes: 32)
        try await console.store.insertEnrollmentToken(
            EnrollmentToken(
                digest: SecretToken.digest(token), issuer: ConsoleApp.apiKeyID, clientUserID: "alice",
                createdAt: console.clock.now, expiresAt: console.clock.now + 600))
        return token
    }

    static func cookie(_ response: TestResponse, _ name: String) -> String? {
        for field in response.headers[values: HTTPField.Name("Set-Cookie")!] {
            let pair = field.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0] == name { return String(pair[1]) }
        }
        return nil
    }

    /// Signs in: asks, approves on `device` at the clock's time plus
    /// `approvalDelay`, and finishes `finishDelay` later.
    static func signIn(
        _ console: TestBroker, _ client: some TestClientProtocol, device: TestDevice, finishDelay: TimeInterval = 0
    ) async throws -> TestResponse {
        let started = try await client.execute(
            uri: "/console/api/sign-in", method: .post, headers: [.contentType: "application/json"],
            body: ByteBuffer(string: #"{"operator":"alice"}"#))
        #expect(started.status == .created)
        let attempt = try #require(cookie(started, "countersign_console_sign_in"))
        let number =
            try #require(
                try JSONSerialization.jsonObject(with: Data(started.body.readableBytesView)) as? [String: Any])[
                "match_number"] as? String
        let item = try #require(try await console.inbox(client, device).first)
        #expect(item.event.channel == .console)
        let decided = try await console.submit(
            client, eventID: item.event.ID,
            decision: try await device.decision(on: item, .approve, match: number, now: console.clock.now))
        #expect(decided.status == .ok)
        console.clock.advance(by: finishDelay)
        return try await client.execute(
            uri: "/console/api/session", method: .post,
            headers: [HTTPField.Name("Cookie")!: "countersign_console_sign_in=\(attempt)"])
    }

    @Test("a session takes requests for its hour and none after; an approval finishes a sign-in within 5 minutes only")
    func expiry() async throws {
        let (broker, console) = try await Self.console()
        try await broker.test { client in
            let alice = try await console.enroll(client, user: "alice", token: try await Self.token(console))
            let signedIn = try await Self.signIn(console, client, device: alice.device)
            #expect(signedIn.status == .created)
            let secret = try #require(Self.cookie(signedIn, "countersign_console"))
            let session: HTTPFields = [HTTPField.Name("Cookie")!: "countersign_console=\(secret)"]
            #expect(try await client.execute(uri: "/console/api/session", method: .get, headers: session).status == .ok)
            broker.clock.advance(by: ConsoleSessionRule.lifetime - 1)
            #expect(try await client.execute(uri: "/console/api/session", method: .get, headers: session).status == .ok)
            broker.clock.advance(by: 1)
            let expired = try await client.execute(uri: "/console/api/session", method: .get, headers: session)
            #expect(expired.status == .unauthorized)
            #expect(expired.headers[.wwwAuthenticate] == nil, "no password dialog in the browser")

            let late = try await Self.signIn(
                console, client, device: alice.device, finishDelay: ConsoleSessionRule.signInWindow + 1)
            #expect(late.status == .conflict, "\(String(buffer: late.body))")
            #expect(Self.cookie(late, "countersign_console") == nil)
        }
    }

    @Test("with the console's app requiring user verification, only an approval with the operator's passkey signs in")
    func passkeyRequired() async throws {
        let (broker, console) = try await Self.console(userVerification: .required)
        try await broker.test { client in
            var authenticator = TestAuthenticator()
            let alice = try await console.enroll(client, user: "alice", token: try await Self.token(console))
            let registered = try await PasskeyTests.put(console, client, alice.device) {
                PasskeyTests.body(authenticator.register(challenge: $0))
            }
            #expect(registered.status == .ok)
            let started = try await client.execute(
                uri: "/console/api/sign-in", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"operator":"alice"}"#))
            let attempt = try #require(Self.cookie(started, "countersign_console_sign_in"))
            let number = try CIBAPasskeyTests.object(started)["match_number"] as? String
            let item = try #require(try await console.inbox(client, alice.device).first)
            #expect(item.event.userVerification == "required")
            let decision = try await alice.device.decision(
                on: item, .approve, match: number, now: broker.clock.now,
                broker: PasskeyTests.localhost)
            let keyOnly = try await alice.device.decision(
                on: item, .approve, match: number, now: broker.clock.now, broker: PasskeyTests.localhost)
            let bare = try await PasskeyTests.decide(console, client, item, keyOnly, assertion: nil)
            #expect(bare.status == .forbidden && errorCode(bare) == "user_verification_required")
            let approved = try await PasskeyTests.decide(
                console, client, item, decision,
                assertion: try authenticator.assert(challenge: PasskeyAssertion.challenge(for: decision)))
            #expect(approved.status == .ok, "\(String(buffer: approved.body))")
            let finished = try await client.execute(
                uri: "/console/api/session", method: .post,
                headers: [HTTPField.Name("Cookie")!: "countersign_console_sign_in=\(attempt)"])
            #expect(finished.status == .created, "\(String(buffer: finished.body))")
        }
    }
}
