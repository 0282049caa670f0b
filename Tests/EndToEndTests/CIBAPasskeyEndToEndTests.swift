import CountersignClient
import CountersignCore
import Foundation
import Testing

/// OpenID CIBA asking for the owner to be verified: the relying party's
/// backchannel request (scripts/ciba-client.py, written from the
/// specifications) carries `acr_values=urn:countersign:acr:passkey`, and
/// the user's CLI device, a real `device-agent`, approves it with the
/// passkey it made on a FIDO2 security key played in software, loaded in
/// place of libfido2 (`COUNTERSIGN_LIBFIDO2`).
///
/// The machine is enrolled at the broker's `localhost` name, the relying
/// party's ID: WebAuthn takes no address.
@Suite("end to end: OpenID CIBA that asks for a passkey, approved with a security key", .serialized)
struct CIBAPasskeyEndToEndTests {
    /// The broker's `localhost` URL, the one the machine knows.
    static func local(_ broker: LiveBroker) -> String { PasskeyBrowserTests.local(broker) }

    /// `device-agent` on `machine` for alice, at the broker's `localhost` name.
    static func agent(
        _ broker: LiveBroker, _ arguments: [String], machine: URL, environment: [String: String] = [:]
    ) throws -> RunningProcess {
        try RunningProcess(
            "device-agent",
            arguments + [
                "--broker", local(broker), "--api-key", broker.apiKeyID, "--config-dir", machine.path, "--user",
                "alice",
            ], environment: environment)
    }

    /// A machine enrolled as alice's trusted device by the real agent.
    static func enrollMachine(_ broker: LiveBroker, name: String) async throws -> URL {
        let machine = try temporaryDirectory("machine-\(name)").appendingPathComponent("countersign")
        let token = try await broker.backend.createEnrollmentToken(user: "alice").token
        let enroll = try agent(broker, ["enroll", "--token", token, "--name", name], machine: machine)
        guard try await enroll.exitCode(timeout: .seconds(120)) == 0 else {
            throw ProcessFailure("enroll failed: \(enroll.text)")
        }
        return machine
    }

    /// The CIBA client for alice, asking for the passkey class.
    static func client(_ broker: LiveBroker, bindingMessage: String) throws -> RunningProcess {
        try RunningProcess(
            "/usr/bin/env",
            [
                "python3", scriptsDirectory.appendingPathComponent("ciba-client.py").path, broker.url,
                broker.apiKeyID, broker.apiSecret, "alice", "--acr-values", ApprovalAuthentication.passkeyACR,
                "--binding-message", bindingMessage,
                // Ten minutes: a busy machine adds the key between two answers.
                "--requested-expiry", "600",
            ])
    }

    @Test(
        "acr_values=passkey: refused until the CLI device has a passkey, then approved with its security key"
    )
    func approvedWithSecurityKey() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let key = try await SoftwareKeyLibrary.build()
        let machine = try await Self.enrollMachine(broker, name: "laptop")
        let backend = CountersignBackend(
            broker: Self.local(broker), apiKeyID: broker.apiKeyID, apiSecretKey: broker.apiSecret)
        let ciba = try Self.client(broker, bindingMessage: "Wire 1200 EUR to ACME")
        let refused = try Self.client(broker, bindingMessage: "Wire 9000 EUR to Nobody")
        let eventID = try await ciba.waitFor(#"auth_req_id: (ev_[A-Za-z0-9_-]+)\."#, timeout: .seconds(120))
        let refusedID = try await refused.waitFor(#"auth_req_id: (ev_[A-Za-z0-9_-]+)\."#, timeout: .seconds(120))

        // The request requires user verification, as any request of the backend's that asks for it.
        let pending = try await backend.event(id: eventID)
        #expect(pending.status == .pending && pending.userVerification == "required", "\(pending)")
        #expect(pending.details == "Wire 1200 EUR to ACME")

        // Without a passkey the device cannot approve it, even with a security key plugged in:
        // the broker answers user_verification_required, and the agent says so.
        let early = try Self.agent(
            broker, ["approve", "--event", eventID, "--yes"], machine: machine, environment: key.environment)
        #expect(try await early.exitCode(timeout: .seconds(120)) == 1, "\(early.text)")
        #expect(early.text.contains("device-agent security-key add"), "\(early.text)")
        #expect(
            early.text.contains("not approved: this request must be approved with a passkey that verifies you"),
            "\(early.text)")
        let store = CredentialStore(directory: machine)
        let device = try store.unlock(try #require(try store.accounts().first), pin: nil)
        let item = try await SecurityKeyEndToEndTests.item(eventID, device)
        await #expect(throws: CountersignError(status: 403, code: "user_verification_required", message: "")) {
            try await CountersignClient(for: device).decide(item, verdict: .approve, match: nil, credential: device)
        }
        #expect(try await backend.event(id: eventID).status == .pending)
        #expect(ciba.process.isRunning, "the client still polls: \(ciba.text)")

        // Rejecting needs no passkey, nor libfido2.
        let reject = try Self.agent(
            broker, ["approve", "--event", refusedID, "--reject"], machine: machine,
            environment: ["COUNTERSIGN_LIBFIDO2": FIDO2LibraryTests.missing])
        #expect(try await reject.exitCode(timeout: .seconds(120)) == 0, "\(reject.text)")
        #expect(reject.text.contains("Rejected."), "\(reject.text)")
        #expect(try await refused.exitCode(timeout: .seconds(120)) == 0, "\(refused.text)")
        #expect(try Self.result(of: refused)["outcome"] as? String == "access_denied")

        // The passkey, made on the security key by `device-agent security-key add`.
        let add = try Self.agent(broker, ["security-key", "add"], machine: machine, environment: key.environment)
        #expect(try await add.exitCode(timeout: .seconds(120)) == 0, "\(add.text)")
        #expect(add.text.contains("(RP ID localhost)"), "\(add.text)")
        #expect(add.text.contains("Touch the fingerprint reader of the security key"), "\(add.text)")
        let devices = try await backend.devices(user: "alice")
        let laptop = try #require(devices.first { $0.id == device.deviceID })
        let passkey = try #require(laptop.passkey, "\(devices)")
        #expect(passkey.credentialID == (try key.credentialID()))

        // Now the same request is approved with it.
        let approve = try Self.agent(
            broker, ["approve", "--event", eventID, "--yes"], machine: machine, environment: key.environment)
        #expect(try await approve.exitCode(timeout: .seconds(120)) == 0, "\(approve.text)")
        #expect(approve.text.contains("have its security key at hand"), "\(approve.text)")
        #expect(approve.text.contains("Wire 1200 EUR to ACME") && approve.text.contains("Approved."))

        // The client's ID token, verified with the broker's JWKS, says how the user was authenticated.
        #expect(try await ciba.exitCode(timeout: .seconds(180)) == 0, "\(ciba.text)")
        let outcome = try Self.result(of: ciba)
        #expect(outcome["outcome"] as? String == "tokens", "\(outcome)")
        let claims = try #require(outcome["claims"] as? [String: Any])
        #expect(claims["sub"] as? String == "alice" && claims["aud"] as? String == broker.apiKeyID)
        #expect(claims["acr"] as? String == ApprovalAuthentication.passkeyACR, "\(claims)")
        let amr = try #require(claims["amr"] as? [String], "\(claims)")
        #expect(amr.contains("hwk") && amr.contains("user"), "RFC 8176: a hardware key that verified the user")
        #expect(amr == ApprovalAuthentication(acr: ApprovalAuthentication.passkeyACR).amr)
        #expect((claims["urn:openid:params:jwt:claim:auth_req_id"] as? String)?.hasPrefix(eventID + ".") == true)
        #expect(outcome["second_redemption"] as? String == "invalid_grant")
        #expect(outcome["refreshed_acr"] as? String == ApprovalAuthentication.passkeyACR, "kept on refresh")

        // The event carries the assertion, and the backend proves the decision from it with what it pinned.
        let decided = try await backend.event(id: eventID)
        #expect(decided.status == .approved && decided.decidedBy == device.deviceID)
        #expect(decided.acr == ApprovalAuthentication.passkeyACR && decided.amr == amr)
        let assertion = try #require(decided.assertion)
        #expect(assertion.credentialID == passkey.credentialID)
        let proven = try await backend.verifyDecision(
            of: decided, app: "demo", pinnedKeys: devices.map(\.publicKey),
            pinnedPasskeys: [device.deviceID: [passkey]])
        #expect(proven.evt == eventID && proven.decision == .approve)
        await #expect(throws: ProtocolError(.wrongKey, ""), "no passkey pinned for the device") {
            try await backend.verifyDecision(of: decided, app: "demo", pinnedKeys: devices.map(\.publicKey))
        }
        var stripped = decided
        stripped.assertion = nil
        await #expect(throws: ProtocolError(.userNotVerified, "")) {
            try await backend.verifyDecision(
                of: stripped, app: "demo", pinnedKeys: devices.map(\.publicKey),
                pinnedPasskeys: [device.deviceID: [passkey]])
        }
    }

    /// The JSON object the client printed last.
    static func result(of process: RunningProcess) throws -> [String: Any] {
        let line = try #require(process.text.split(separator: "\n").last { $0.hasPrefix("{") }, "\(process.text)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }
}
