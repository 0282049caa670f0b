import CountersignClient
import CountersignCore
import Foundation
import Testing

@testable import device_agent

/// The agent's security-key passkey against a real broker: what the agent
/// builds from libfido2's outputs (here a key played in software, since no
/// key is plugged in), sent with the SDK's two calls, and the real
/// `device-agent` commands up to the point where they need the hardware.
@Suite("end to end: a passkey on a FIDO2 security key", .serialized)
struct SecurityKeyEndToEndTests {
    /// What `SecurityKeySession.register` does, with the key in software.
    static func register(
        _ key: SoftwareSecurityKey, _ ceremony: SecurityKeyCeremony, _ challenge: Data
    ) throws -> PasskeyRegistration {
        let clientData = ceremony.clientData("webauthn.create", challenge: challenge)
        let made = key.makeCredential(
            clientDataHash: SecurityKeyCeremony.clientDataHash(clientData), rpID: ceremony.rpID)
        return try ceremony.registration(
            clientData: clientData, credentialID: made.id, authenticatorData: made.authenticatorData)
    }

    /// What `SecurityKeySession.assert` does, with the key in software.
    static func assert(
        _ key: inout SoftwareSecurityKey, _ ceremony: SecurityKeyCeremony, _ challenge: Data
    ) throws -> PasskeyAssertion {
        let clientData = ceremony.clientData("webauthn.get", challenge: challenge)
        let got = try key.getAssertion(
            clientDataHash: SecurityKeyCeremony.clientDataHash(clientData), rpID: ceremony.rpID)
        return try ceremony.assertion(
            clientData: clientData, credentialID: Base64URL.encode(key.credentialID), returnedID: got.id,
            wrappedAuthenticatorData: got.wrappedAuthenticatorData, signature: got.signature)
    }

    /// The pending request `id` as this device's inbox shows it.
    static func item(_ id: String, _ device: DeviceCredential) async throws -> InboxItem {
        try #require(try await CountersignClient(for: device).inbox(device, wait: 0).first { $0.event.ID == id })
    }

    @Test(
        "registered for the request's proof; approves a request that requires it, which nothing else does; replaced only with the current one"
    )
    func registerAndApprove() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let device = try await broker.enrollDevice(name: "laptop")
        let client = CountersignClient(for: device)
        // The broker is at 127.0.0.1: the RP ID is localhost, as the broker's.
        let ceremony = try SecurityKeyCeremony(broker: device.broker)
        #expect(ceremony.rpID == "localhost")
        var key = SoftwareSecurityKey()
        let registered = try await client.registerPasskey(device) { challenge in
            (try Self.register(key, ceremony, challenge), replacing: nil)
        }
        let passkey = try #require(registered.passkey)
        #expect(passkey.credentialID == Base64URL.encode(key.credentialID))
        #expect(try await client.whoAmI(device).passkey == passkey)

        let ticket = try await broker.backend.requestApproval(
            user: "alice", details: "Pay 40.00 EUR to ACME", numberMatching: false, userVerification: true)
        let item = try await Self.item(ticket.event.ID, device)
        // Without the assertion, and with one made for another origin: refused.
        await #expect(throws: CountersignError(status: 403, code: "user_verification_required", message: "")) {
            try await client.decide(item, verdict: .approve, match: nil, credential: device)
        }
        let elsewhere = try SecurityKeyCeremony(broker: "http://127.0.0.1:1")
        await #expect {
            try await client.decide(item, verdict: .approve, match: nil, credential: device) { challenge in
                try Self.assert(&key, elsewhere, challenge)
            }
        } throws: { error in
            (error as? CountersignError)?.message.contains("not this broker's page") == true
        }
        #expect(try await broker.backend.event(id: ticket.event.ID).status == .pending)

        let approved = try await client.decide(item, verdict: .approve, match: nil, credential: device) { challenge in
            try Self.assert(&key, ceremony, challenge)
        }
        #expect(approved.status == .approved)
        let stored = try await broker.backend.event(id: ticket.event.ID)
        #expect(stored.assertion?.credentialID == passkey.credentialID)
        // Kept verbatim: a backend that knows the broker at 127.0.0.1, as
        // the agent does, proves it from the stored decision and the pinned
        // passkey alone (the RP ID localhost, by the broker's rule): the SDK,
        // and py_webauthn through scripts/verify-decision.py.
        let devices = try await broker.backend.devices(user: "alice")
        let claims = try await broker.backend.verifyDecision(
            of: stored, app: "demo", pinnedKeys: devices.map(\.publicKey), pinnedPasskeys: [device.deviceID: [passkey]])
        #expect(claims.evt == ticket.event.ID && claims.aud.hasPrefix("http://127.0.0.1:"))
        let pinned = try temporaryDirectory("pinned").appendingPathComponent("devices.json")
        try WireCoding.encoder().encode(["devices": devices]).write(to: pinned)
        let (status, text) = try await DecisionCheckEndToEndTests().python(
            stored, keys: pinned, app: "demo", broker: broker.url)
        #expect(status == 0, "\(text)")

        // Replacing: refused without the current passkey, done with it.
        var newKey = SoftwareSecurityKey()
        await #expect(throws: CountersignError(status: 403, code: "user_verification_required", message: "")) {
            try await client.registerPasskey(device) { challenge in
                (try Self.register(newKey, ceremony, challenge), replacing: nil)
            }
        }
        let replaced = try await client.registerPasskey(device) { challenge in
            (try Self.register(newKey, ceremony, challenge), replacing: try Self.assert(&key, ceremony, challenge))
        }
        #expect(replaced.passkey?.credentialID == Base64URL.encode(newKey.credentialID))
        let next = try await broker.backend.requestApproval(
            user: "alice", numberMatching: false, userVerification: true)
        let nextItem = try await Self.item(next.event.ID, device)
        await #expect(throws: CountersignError.self, "the old key approves nothing now") {
            try await client.decide(nextItem, verdict: .approve, match: nil, credential: device) { challenge in
                try Self.assert(&key, ceremony, challenge)
            }
        }
        let second = try await client.decide(nextItem, verdict: .approve, match: nil, credential: device) {
            challenge in try Self.assert(&newKey, ceremony, challenge)
        }
        #expect(second.status == .approved)
    }

    @Test(
        "device-agent without libfido2 or without a key: security-key add and approving say what is missing; rejecting needs neither"
    )
    func agentWithoutKey() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let missing = ["COUNTERSIGN_LIBFIDO2": FIDO2LibraryTests.missing]
        let withKey = FIDO2LibraryTests.installed && FIDO2LibraryTests.noKeyPlugged

        let add = try broker.agent(["security-key", "add"], configDirectory: laptop, environment: missing)
        #expect(try await add.exitCode() == 1, "\(add.text)")
        #expect(add.text.contains("a security key needs libfido2, which cannot be loaded here"), "\(add.text)")
        #expect(add.text.contains("install libfido2-1 (apt install libfido2-1)"), "\(add.text)")
        if withKey {
            let plugged = try broker.agent(["security-key", "add"], configDirectory: laptop)
            #expect(try await plugged.exitCode() == 1, "\(plugged.text)")
            #expect(plugged.text.contains("no FIDO2 security key is plugged in"), "\(plugged.text)")
        }

        // The machine's passkey, made with its own device key and a key in software.
        let store = CredentialStore(directory: laptop)
        let device = try store.unlock(try #require(try store.accounts().first), pin: nil)
        let key = SoftwareSecurityKey()
        _ = try await CountersignClient(for: device).registerPasskey(device) { challenge in
            (try Self.register(key, try SecurityKeyCeremony(broker: device.broker), challenge), replacing: nil)
        }
        let ticket = try await broker.backend.requestApproval(
            user: "alice", numberMatching: false, userVerification: true)
        let id = ticket.event.ID

        let approve = try broker.agent(
            ["approve", "--event", id, "--yes"], configDirectory: laptop, environment: missing)
        #expect(try await approve.exitCode() == 1, "\(approve.text)")
        #expect(approve.text.contains("approved with this device's passkey: have its security key at hand"))
        #expect(approve.text.contains("not approved: a security key needs libfido2"), "\(approve.text)")
        #expect(approve.text.contains("install libfido2-1"), "\(approve.text)")
        if withKey {
            let plugged = try broker.agent(["approve", "--event", id, "--yes"], configDirectory: laptop)
            #expect(try await plugged.exitCode() == 1, "\(plugged.text)")
            #expect(
                plugged.text.contains("not approved: no FIDO2 security key is plugged in"), "\(plugged.text)")
        }
        #expect(try await broker.backend.event(id: id).status == .pending, "nothing was sent")

        let reject = try broker.agent(
            ["approve", "--event", id, "--reject"], configDirectory: laptop, environment: missing)
        #expect(try await reject.exitCode() == 0, "\(reject.text)")
        #expect(reject.text.contains("Rejected."), "\(reject.text)")
        #expect(try await broker.backend.event(id: id).status == .rejected)
    }
}
