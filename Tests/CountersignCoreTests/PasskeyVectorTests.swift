import CountersignCore
import Foundation
import Testing

struct PasskeyVectors: Decodable {
    struct Registration: Decodable, CustomStringConvertible, Sendable {
        let tcId: Int
        let comment: String
        let credential_id: String
        let client_data_json: String
        let attestation_object: String
        let transports: [String]
        let result: String
        let error: String?
        var description: String { "#\(tcId) \(comment)" }
    }
    struct Assertion: Decodable, CustomStringConvertible, Sendable {
        let tcId: Int
        let comment: String
        let decision: String
        let storedSignCount: UInt32
        let assertion: PasskeyAssertion
        let result: String
        let error: String?
        var description: String { "#\(tcId) \(comment)" }
    }
    let rpId: String
    let origins: [String]
    let registrationChallenge: String
    let credentialId: String
    let aaguid: UUID
    let passkey: DevicePublicKey
    let registrations: [Registration]
    let assertions: [Assertion]

    var relyingParty: RelyingParty { RelyingParty(id: rpId, origins: Set(origins.compactMap(Origin.init(url:)))) }

    static let file = Result { try Vectors.load("passkeys.json", as: PasskeyVectors.self) }
}

/// proto/vectors/passkeys.json, made by an authenticator played in Python
/// and checked against py_webauthn (scripts/generate-passkey-vectors.py).
@Suite("passkey vectors (proto/signing.md §10)")
struct PasskeyVectorTests {
    @Test("registrations", arguments: try PasskeyVectors.file.get().registrations)
    func registration(_ test: PasskeyVectors.Registration) throws {
        let vectors = try PasskeyVectors.file.get()
        let registration = PasskeyRegistration(
            credentialID: test.credential_id, clientDataJSON: test.client_data_json,
            attestationObject: test.attestation_object, transports: test.transports)
        let challenge = try #require(Base64URL.decode(vectors.registrationChallenge))
        let outcome = Result { () throws(ProtocolError) in
            try registration.verify(challenge: challenge, relyingParty: vectors.relyingParty, now: Date())
        }
        switch outcome {
        case .success(let passkey):
            #expect(test.result == "valid", "accepted: \(test)")
            #expect(passkey.publicKey == vectors.passkey && passkey.credentialID == vectors.credentialId)
            #expect(passkey.aaguid == vectors.aaguid && passkey.backupEligible && passkey.signCount == 0)
            #expect(passkey.transports == test.transports)
        case .failure(let error):
            #expect(test.result == "invalid", "refused: \(test): \(error)")
            #expect(error.code.rawValue == test.error, "\(test): \(error)")
        }
    }

    @Test("approvals' assertions", arguments: try PasskeyVectors.file.get().assertions)
    func assertion(_ test: PasskeyVectors.Assertion) throws {
        let vectors = try PasskeyVectors.file.get()
        let outcome = Result { () throws(ProtocolError) in
            try test.assertion.verify(
                of: vectors.credentialId, publicKey: vectors.passkey,
                challenge: PasskeyAssertion.challenge(for: test.decision),
                relyingParty: vectors.relyingParty, storedSignCount: test.storedSignCount)
        }
        switch outcome {
        case .success(let data):
            #expect(test.result == "valid", "accepted: \(test)")
            #expect(data.flags.contains(AuthenticatorData.Flags.userVerified))
        case .failure(let error):
            #expect(test.result == "invalid", "refused: \(test): \(error)")
            #expect(error.code.rawValue == test.error, "\(test): \(error)")
        }
    }
}
