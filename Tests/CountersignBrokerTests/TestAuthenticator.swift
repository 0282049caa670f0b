import CountersignCore
import Crypto
import Foundation

/// A WebAuthn authenticator played from the specification (Level 3, §6):
/// one ES256 credential, its authenticator data and CBOR written by hand,
/// and the client data a browser would collect on `origin`.
struct TestAuthenticator {
    let key = P256.Signing.PrivateKey()
    let credentialID = Data((0..<20).map { _ in UInt8.random(in: 0...255) })
    var rpID = "localhost"
    var origin = "http://localhost:8080"
    /// The counter it keeps; 0 and staying 0 for one that keeps none.
    var signCount: UInt32 = 1
    /// Whether it verifies its owner (UV); a bare security key does not.
    var verifiesUser = true

    var credentialIDText: String { Base64URL.encode(credentialID) }

    /// `navigator.credentials.create` for `challenge`.
    func register(challenge: Data) -> PasskeyRegistration {
        let x = key.publicKey.rawRepresentation.prefix(32)
        let y = key.publicKey.rawRepresentation.suffix(32)
        // {1: 2, 3: -7, -1: 1, -2: x, -3: y}: EC2, ES256, P-256.
        var data = authenticatorData(flags: 0x40, count: 0)
        data.append(Data(repeating: 0, count: 16))
        data.append(contentsOf: [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)])
        data.append(credentialID)
        data.append(contentsOf: [0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20])
        data.append(x)
        data.append(contentsOf: [0x22, 0x58, 0x20])
        data.append(y)
        // {"fmt": "none", "attStmt": {}, "authData": data}
        var object = Data([0xA3, 0x63])
        object.append(contentsOf: "fmt".utf8)
        object.append(0x64)
        object.append(contentsOf: "none".utf8)
        object.append(0x67)
        object.append(contentsOf: "attStmt".utf8)
        object.append(contentsOf: [0xA0, 0x68])
        object.append(contentsOf: "authData".utf8)
        object.append(contentsOf: [0x58, UInt8(data.count)])
        object.append(data)
        return PasskeyRegistration(
            credentialID: credentialIDText,
            clientDataJSON: Base64URL.encode(clientData("webauthn.create", challenge)),
            attestationObject: Base64URL.encode(object), transports: ["internal"])
    }

    /// `navigator.credentials.get` for `challenge`; the counter goes up
    /// first, as an authenticator's does, unless it keeps none.
    mutating func assert(challenge: Data) throws -> PasskeyAssertion {
        if signCount != 0 { signCount += 1 }
        let data = authenticatorData(flags: 0, count: signCount)
        let collected = clientData("webauthn.get", challenge)
        let signature = try key.signature(for: data + Data(SHA256.hash(data: collected)))
        return PasskeyAssertion(
            credentialID: credentialIDText, authenticatorData: Base64URL.encode(data),
            clientDataJSON: Base64URL.encode(collected), signature: Base64URL.encode(signature.derRepresentation))
    }

    /// The RP ID hash, UP (and UV if it verifies), `flags`, the counter.
    private func authenticatorData(flags: UInt8, count: UInt32) -> Data {
        var data = Data(SHA256.hash(data: Data(rpID.utf8)))
        data.append(flags | 0x01 | (verifiesUser ? 0x04 : 0))
        withUnsafeBytes(of: count.bigEndian) { data.append(contentsOf: $0) }
        return data
    }

    private func clientData(_ type: String, _ challenge: Data) -> Data {
        Data(
            #"{"type":"\#(type)","challenge":"\#(Base64URL.encode(challenge))","origin":"\#(origin)","crossOrigin":false}"#
                .utf8)
    }
}
