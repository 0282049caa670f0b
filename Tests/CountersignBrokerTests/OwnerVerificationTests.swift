import CountersignBroker
import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// What whoever holds the unlocked device cannot do without its owner:
/// swap the passkey with a copy of it, or, under a key that requires user
/// verification, make recovery codes or remove the owner's other devices.
@Suite("passkeys: the owner's say-so on account changes")
struct OwnerVerificationTests {
    /// `method` on `path` by `device`, with an assertion `assert` makes for
    /// the challenge of this request's own proof (none if nil).
    static func send(
        _ broker: TestBroker, _ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ path: String,
        by device: TestDevice, _ assert: ((Data) throws -> PasskeyAssertion)?
    ) async throws -> TestResponse {
        let headers = try await device.proofHeaders(method, path, now: broker.clock.now)
        guard let assert else { return try await client.execute(uri: path, method: method, headers: headers) }
        let challenge = try PasskeyAssertion.challenge(for: headers[HTTPField.Name("Device-Proof")!]!)
        return try await client.execute(
            uri: path, method: method, headers: headers, body: json(["assertion": AnyEncodable(try assert(challenge))]))
    }

    @Test("a copy of the passkey, its counter behind, can neither replace nor remove it")
    func copiedPasskey() async throws {
        let broker = try await PasskeyTests.broker()
        try await broker.test { client in
            var authenticator = TestAuthenticator()
            // Taken before the owner's approval: behind it from then on.
            let copied = authenticator
            let (alice, item) = try await PasskeyTests.protectedEvent(broker, client, authenticator: authenticator)
            let approval = try await alice.device.decision(
                on: item, .approve, match: nil, now: broker.clock.now, broker: PasskeyTests.localhost)
            let assertion = try authenticator.assert(challenge: PasskeyAssertion.challenge(for: approval))
            let approved = try await PasskeyTests.decide(broker, client, item, approval, assertion: assertion)
            #expect(approved.status == .ok, "\(String(buffer: approved.body))")
            // The exact body again: told it was sent before, not that the passkey was copied.
            let again = try await PasskeyTests.decide(broker, client, item, approval, assertion: assertion)
            #expect(again.status == .conflict && errorCode(again) != "sign_count", "\(String(buffer: again.body))")

            var copy = copied
            let removed = try await Self.send(broker, client, .delete, PasskeyTests.path, by: alice.device) {
                try copy.assert(challenge: $0)
            }
            #expect(removed.status == .badRequest && String(buffer: removed.body).contains("sign_count"))
            let thief = TestAuthenticator()
            copy = copied
            let replaced = try await PasskeyTests.put(broker, client, alice.device) { challenge in
                PasskeyTests.body(
                    thief.register(challenge: challenge), assertion: try copy.assert(challenge: challenge))
            }
            #expect(replaced.status == .badRequest && String(buffer: replaced.body).contains("sign_count"))
            #expect(
                try await broker.store.device(id: alice.device.id)?.passkey?.credentialID
                    == authenticator.credentialIDText)
        }
    }

    @Test("under a required key: recovery codes and removing another device take the owner's passkey")
    func accountChanges() async throws {
        let broker = try await PasskeyTests.broker()
        try await broker.test { client in
            var authenticator = TestAuthenticator()
            let alice = try await UserVerificationPolicyTests.strictAlice(
                broker, client, authenticator: authenticator)
            let laptop = try await broker.enroll(client)
            let codes = "/api/v1/recovery-codes"

            // The device alone, or another without a passkey: refused, nothing made.
            let bare = try await Self.send(broker, client, .post, codes, by: alice.device, nil)
            #expect(bare.status == .forbidden && errorCode(bare) == "user_verification_required")
            let noPasskey = try await Self.send(broker, client, .post, codes, by: laptop.device, nil)
            #expect(noPasskey.status == .forbidden && errorCode(noPasskey) == "user_verification_required")
            let status = try await Self.send(broker, client, .get, codes, by: alice.device, nil)
            #expect(String(buffer: status.body).contains("\"remaining\":0"), "\(String(buffer: status.body))")

            // The owner, verified: made, and the counter kept.
            let made = try await Self.send(broker, client, .post, codes, by: alice.device) {
                try authenticator.assert(challenge: $0)
            }
            #expect(made.status == .created, "\(String(buffer: made.body))")
            #expect(try await broker.store.device(id: alice.device.id)?.passkey?.signCount == authenticator.signCount)

            let removal = "/api/v1/devices/\(laptop.device.id)"
            let refused = try await Self.send(broker, client, .delete, removal, by: alice.device, nil)
            #expect(refused.status == .forbidden && errorCode(refused) == "user_verification_required")
            #expect(try await broker.store.device(id: laptop.device.id)?.revokedAt == nil)
            let removed = try await Self.send(broker, client, .delete, removal, by: alice.device) {
                try authenticator.assert(challenge: $0)
            }
            #expect(removed.status == .ok, "\(String(buffer: removed.body))")
            // A device may still remove itself: that only takes power away.
            let alone = try await Self.send(
                broker, client, .delete, "/api/v1/devices/\(alice.device.id)", by: alice.device, nil)
            #expect(alone.status == .ok, "\(String(buffer: alone.body))")
        }
    }

    @Test("without the policy, recovery codes and removals take the device's proof alone, as before")
    func withoutPolicy() async throws {
        let broker = try await PasskeyTests.broker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let laptop = try await broker.enroll(client)
            #expect(
                try await Self.send(broker, client, .post, "/api/v1/recovery-codes", by: alice.device, nil).status
                    == .created)
            #expect(
                try await Self.send(
                    broker, client, .delete, "/api/v1/devices/\(laptop.device.id)", by: alice.device, nil
                ).status == .ok)
        }
    }
}
