import CountersignCore
import Crypto
import Foundation
import Testing

@testable import device_agent

/// The pure part of the agent's security-key support: the relying party
/// and client data it names, and the wire types it makes from libfido2's
/// outputs, which Core's checks (the broker's) must accept for the right
/// origin and RP ID and refuse for another. The outputs come from a key
/// played in software; no key is plugged in here.
@Suite("security keys: the ceremony around libfido2's outputs")
struct SecurityKeyCeremonyTests {
    /// The relying party of a broker answering at `url` by default: its own
    /// origin, and for a loopback address localhost as well
    /// (`BrokerConfiguration.origins()`).
    static func relyingParty(of url: String) throws -> RelyingParty {
        let origin = try #require(Origin(url: url))
        var origins: Set<Origin> = [origin]
        if origin.host == "127.0.0.1" {
            origins.insert(try #require(Origin(url: "http://localhost:\(origin.port)")))
        }
        return try #require(RelyingParty(issuer: origin, origins: origins))
    }

    static let relyingParties: [(String, String, String)] = [
        ("https://auth.example.com", "auth.example.com", "https://auth.example.com"),
        ("https://Auth.Example.com:443/", "auth.example.com", "https://auth.example.com"),
        ("https://auth.example.com:8443", "auth.example.com", "https://auth.example.com:8443"),
        ("http://127.0.0.1:8080", "localhost", "http://localhost:8080"),
        ("http://[::1]:8080", "localhost", "http://localhost:8080"),
        ("http://localhost:9000", "localhost", "http://localhost:9000"),
    ]

    @Test("the RP ID and origin are the broker's, by its own rule", arguments: Self.relyingParties)
    func relyingParty(_ broker: String, _ rpID: String, _ origin: String) throws {
        let ceremony = try SecurityKeyCeremony(broker: broker)
        #expect(ceremony.rpID == rpID)
        #expect(ceremony.origin.description == origin)
    }

    @Test("a broker known by an address other than loopback is refused: WebAuthn takes no address")
    func address() {
        for broker in ["http://10.0.0.5:8080", "https://[2001:db8::1]"] {
            #expect {
                try SecurityKeyCeremony(broker: broker)
            } throws: { error in
                "\(error)".contains("needs the broker's URL to name a domain (WebAuthn takes no address)")
            }
        }
    }

    @Test("client data as a browser writes it: type, challenge, origin, crossOrigin, in that order")
    func clientData() throws {
        let ceremony = try SecurityKeyCeremony(broker: "https://auth.example.com")
        let challenge = Data(SHA256.hash(data: Data("header.payload".utf8)))
        let json = String(decoding: ceremony.clientData("webauthn.get", challenge: challenge), as: UTF8.self)
        #expect(
            json
                == #"{"type":"webauthn.get","challenge":"\#(Base64URL.encode(challenge))","origin":"https://auth.example.com","crossOrigin":false}"#
        )
        #expect(SecurityKeyCeremony.clientDataHash(Data(json.utf8)) == Data(SHA256.hash(data: Data(json.utf8))))
    }

    @Test(
        "a registration from libfido2's raw authenticator data is accepted by the broker's check for its origin only",
        arguments: ["https://auth.example.com", "http://127.0.0.1:8080"])
    func registration(_ broker: String) throws {
        let ceremony = try SecurityKeyCeremony(broker: broker)
        let key = SoftwareSecurityKey()
        let challenge = try PasskeyAssertion.challenge(for: "aGVhZGVy.cGF5bG9hZA.c2ln")
        let clientData = ceremony.clientData("webauthn.create", challenge: challenge)
        let made = key.makeCredential(
            clientDataHash: SecurityKeyCeremony.clientDataHash(clientData), rpID: ceremony.rpID)
        let registration = try ceremony.registration(
            clientData: clientData, credentialID: made.id, authenticatorData: made.authenticatorData)
        #expect(registration.transports == ["usb"])

        let passkey = try registration.verify(
            challenge: challenge, relyingParty: try Self.relyingParty(of: broker), now: Date())
        #expect(passkey.credentialID == Base64URL.encode(key.credentialID))
        #expect(passkey.publicKey == DevicePublicKey(key.key.publicKey))
        #expect(passkey.signCount == 7)
        let object = try CBOR.decode(try #require(Base64URL.decode(registration.attestationObject)))
        #expect(object["fmt"] == .text("none") && object["attStmt"] == .map([]))

        // Another broker's page, or another challenge: refused.
        #expect(throws: ProtocolError(.wrongOrigin, "")) {
            try registration.verify(
                challenge: challenge, relyingParty: try Self.relyingParty(of: "https://evil.example"), now: Date())
        }
        #expect(throws: ProtocolError(.wrongChallenge, "")) {
            try registration.verify(
                challenge: Data(repeating: 1, count: 32), relyingParty: try Self.relyingParty(of: broker), now: Date())
        }
        // A key that did not verify its owner: refused too.
        var bare = key
        bare.verifiesUser = false
        let unverified = bare.makeCredential(
            clientDataHash: SecurityKeyCeremony.clientDataHash(clientData), rpID: ceremony.rpID)
        #expect(throws: ProtocolError(.userNotVerified, "")) {
            try ceremony.registration(
                clientData: clientData, credentialID: unverified.id, authenticatorData: unverified.authenticatorData
            ).verify(challenge: challenge, relyingParty: try Self.relyingParty(of: broker), now: Date())
        }
    }

    @Test(
        "an assertion from libfido2's CBOR-wrapped authenticator data verifies with the passkey, for its origin only",
        arguments: [false, true])
    func assertion(omittingID: Bool) throws {
        let broker = "http://127.0.0.1:8080"
        let ceremony = try SecurityKeyCeremony(broker: broker)
        var key = SoftwareSecurityKey()
        let credentialID = Base64URL.encode(key.credentialID)
        let challenge = try PasskeyAssertion.challenge(for: "aGVhZGVy.cGF5bG9hZA.c2ln")
        let clientData = ceremony.clientData("webauthn.get", challenge: challenge)
        let got = try key.getAssertion(
            clientDataHash: SecurityKeyCeremony.clientDataHash(clientData), rpID: ceremony.rpID,
            omittingID: omittingID)
        let assertion = try ceremony.assertion(
            clientData: clientData, credentialID: credentialID, returnedID: got.id,
            wrappedAuthenticatorData: got.wrappedAuthenticatorData, signature: got.signature)

        let data = try assertion.verify(
            of: credentialID, publicKey: DevicePublicKey(key.key.publicKey), challenge: challenge,
            relyingParty: try Self.relyingParty(of: broker), storedSignCount: 7)
        #expect(data.signCount == 8 && data.flags.contains(.userVerified))
        #expect(throws: ProtocolError(.wrongOrigin, "")) {
            try assertion.verify(
                of: credentialID, publicKey: DevicePublicKey(key.key.publicKey), challenge: challenge,
                relyingParty: try Self.relyingParty(of: "https://auth.example.com"), storedSignCount: 7)
        }
        // Signed for the key's own RP ID, but the client data names another origin.
        let elsewhere = try SecurityKeyCeremony(broker: "http://127.0.0.1:9999")
        let moved = try elsewhere.assertion(
            clientData: elsewhere.clientData("webauthn.get", challenge: challenge), credentialID: credentialID,
            returnedID: got.id, wrappedAuthenticatorData: got.wrappedAuthenticatorData, signature: got.signature)
        #expect(throws: ProtocolError(.wrongOrigin, "")) {
            try moved.verify(
                of: credentialID, publicKey: DevicePublicKey(key.key.publicKey), challenge: challenge,
                relyingParty: try Self.relyingParty(of: broker), storedSignCount: 7)
        }
    }

    @Test("libfido2's outputs that are not what it gives are refused before anything is sent")
    func malformedOutputs() throws {
        let ceremony = try SecurityKeyCeremony(broker: "https://auth.example.com")
        var key = SoftwareSecurityKey()
        let clientData = ceremony.clientData("webauthn.get", challenge: Data(repeating: 2, count: 32))
        let got = try key.getAssertion(clientDataHash: Data(repeating: 3, count: 32), rpID: ceremony.rpID)
        let id = Base64URL.encode(key.credentialID)
        let raw = got.wrappedAuthenticatorData.dropFirst(2)
        let refusals: [(String, () throws -> PasskeyAssertion)] = [
            (
                "authenticator data not wrapped in CBOR",
                {
                    try ceremony.assertion(
                        clientData: clientData, credentialID: id, returnedID: got.id,
                        wrappedAuthenticatorData: Data(raw), signature: got.signature)
                }
            ),
            (
                "another credential",
                {
                    try ceremony.assertion(
                        clientData: clientData, credentialID: id, returnedID: Data([1, 2, 3]),
                        wrappedAuthenticatorData: got.wrappedAuthenticatorData, signature: got.signature)
                }
            ),
            (
                "no signature",
                {
                    try ceremony.assertion(
                        clientData: clientData, credentialID: id, returnedID: got.id,
                        wrappedAuthenticatorData: got.wrappedAuthenticatorData, signature: Data())
                }
            ),
        ]
        for (name, make) in refusals {
            #expect(throws: AgentFailure.self, "\(name)") { try make() }
        }
        #expect(throws: AgentFailure.self) {
            try ceremony.registration(clientData: clientData, credentialID: Data(), authenticatorData: Data())
        }
    }
}

/// The thin libfido2 layer, as far as it can be tried without a key.
@Suite("security keys: loading libfido2")
struct FIDO2LibraryTests {
    static let missing = "libfido2-countersign-missing.so.1"

    @Test("without libfido2, using a security key fails saying what to install")
    func missingLibrary() async throws {
        #expect {
            try FIDO2Library.load(Self.missing)
        } throws: { error in
            "\(error)".contains("install libfido2-1") && "\(error)".contains(Self.missing)
        }
        await #expect {
            try await SecurityKeySession.open(broker: "https://auth.example.com", library: Self.missing) { _ in
                Issue.record("no PIN is asked without a key")
                return nil
            }
        } throws: { error in
            "\(error)".contains("install libfido2-1")
        }
    }

    static var installed: Bool { (try? FIDO2Library.load()) != nil }
    static var noKeyPlugged: Bool {
        !((try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? []).contains { $0.hasPrefix("hidraw") }
    }

    @Test(
        "the error codes the agent explains are the ones libfido2 names so (fido/err.h)",
        .enabled(if: Self.installed, "libfido2-1 is not installed"))
    func errorCodes() throws {
        let library = try FIDO2Library.load()
        let names: [Int32: String] = [
            0x00: "FIDO_ERR_SUCCESS", 0x19: "FIDO_ERR_CREDENTIAL_EXCLUDED", 0x27: "FIDO_ERR_OPERATION_DENIED",
            0x2D: "FIDO_ERR_KEEPALIVE_CANCEL", 0x2E: "FIDO_ERR_NO_CREDENTIALS", 0x2F: "FIDO_ERR_USER_ACTION_TIMEOUT",
            0x30: "FIDO_ERR_NOT_ALLOWED", 0x31: "FIDO_ERR_PIN_INVALID", 0x32: "FIDO_ERR_PIN_BLOCKED",
            0x34: "FIDO_ERR_PIN_AUTH_BLOCKED", 0x35: "FIDO_ERR_PIN_NOT_SET", 0x36: "FIDO_ERR_PIN_REQUIRED",
            0x3A: "FIDO_ERR_ACTION_TIMEOUT", 0x3C: "FIDO_ERR_UV_BLOCKED", 0x3F: "FIDO_ERR_UV_INVALID",
        ]
        for (code, name) in names {
            #expect(library.name(of: code) == name, "code \(code)")
        }
        #expect(SecurityKeyDevice.explain(0x31, name: "FIDO_ERR_PIN_INVALID").contains("wrong PIN"))
        #expect(SecurityKeyDevice.explain(-7, name: "FIDO_ERR_INVALID_ARGUMENT").hasSuffix("FIDO_ERR_INVALID_ARGUMENT"))
    }

    @Test(
        "with libfido2 and no key plugged in, the agent says so",
        .enabled(if: Self.installed && Self.noKeyPlugged, "needs libfido2-1 and no key plugged in"))
    func noKey() throws {
        #expect {
            try SecurityKeyDevice(library: try FIDO2Library.load())
        } throws: { error in
            "\(error)" == "no FIDO2 security key is plugged in: plug in yours and run this again"
        }
    }
}
