import CountersignBroker
import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// A code proves someone read a trusted device's screen, not who: it
/// settles nothing that requires the owner verified by a passkey.
@Suite("codes and user verification")
struct CodeUserVerificationTests {
    @Test("a code finishes no LOGIN that requires user verification, and is not spent on it")
    func requiredLogin() async throws {
        let broker = try await PasskeyTests.broker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let secret = try await broker.createTOTPSecret(client, alice.device)
            let code = TOTPTests.code(secret.secret, at: broker.clock.now)
            let protected = try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.appHeaders,
                body: json(["client_user_id": "alice", "requester_name": "new-laptop", "user_verification": "required"])
            ) { try decode(EventTicket.self, $0) }
            try await broker.submitCode(client, protected, code) {
                #expect($0.status == .forbidden && errorCode($0) == "user_verification_required")
            }
            #expect(try await broker.store.event(id: protected.event.ID)?.storedStatus == .pending)
            // The same code still finishes a login that does not require it.
            let plain = try await broker.requestLogin(client)
            try await broker.submitCode(client, plain, code) {
                #expect($0.status == .ok, "\(String(buffer: $0.body))")
            }
        }
    }

    @Test("under a required key a backend cannot record a code as an approved login; checking one stays allowed")
    func recordUnderPolicy() async throws {
        let broker = try await PasskeyTests.broker()
        try await broker.test { client in
            let alice = try await UserVerificationPolicyTests.strictAlice(
                broker, client, authenticator: TestAuthenticator())
            let secret = try await broker.createTOTPSecret(client, alice.device)
            let code = TOTPTests.code(secret.secret, at: broker.clock.now)
            let recorded = CodeVerificationRequest(
                code: code, record: CodeRecord(details: "ssh", requesterName: "web-1", ip: "192.0.2.7"))
            try await client.execute(
                uri: "/api/v1/users/alice/totp/verify", method: .post, headers: broker.backendHeaders,
                body: try json(recorded)
            ) { #expect($0.status == .forbidden && errorCode($0) == "user_verification_required") }
            #expect(
                try await broker.store.events(
                    issuer: broker.apiKeyID, clientUserID: "alice", status: nil, now: broker.clock.now, limit: 10
                ).isEmpty, "nothing recorded")
            try await broker.verifyCode(client, user: "alice", code) {
                #expect($0.status == .ok, "the code itself was not spent: \(String(buffer: $0.body))")
            }
        }
    }
}
