import CountersignCore
import Crypto
import Foundation

/// A FIDO2 security key played in software from the specifications, its
/// outputs in the shape libfido2 1.12 hands them back to the agent: for
/// `fido_dev_make_cred`, the credential id and the raw authenticator data
/// (`fido_cred_authdata_raw_ptr`); for `fido_dev_get_assert`, the
/// authenticator data wrapped in a CBOR byte string
/// (`fido_assert_authdata_ptr`), and the DER signature over
/// `authenticatorData || clientDataHash` (WebAuthn Level 3 §6.1, §6.3.3;
/// CTAP 2.1 §6.1, §6.2). Bytes written by hand, not by the code under test.
struct SoftwareSecurityKey {
    let key = P256.Signing.PrivateKey()
    /// 64 bytes, as many keys' wrapped (non-resident) credential ids are.
    let credentialID = Data((0..<64).map { _ in UInt8.random(in: 0...255) })
    var signCount: UInt32 = 7
    /// Whether it verified its owner (PIN or fingerprint): the UV flag.
    var verifiesUser = true

    /// `fido_dev_make_cred` for `clientDataHash` at `rpID`.
    func makeCredential(clientDataHash: Data, rpID: String) -> (id: Data, authenticatorData: Data) {
        var data = authenticatorData(rpID: rpID, flags: 0x40, count: signCount)
        data.append(Data(repeating: 0xEE, count: 16))  // AAGUID
        data.append(contentsOf: [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)])
        data.append(credentialID)
        // {1: 2, 3: -7, -1: 1, -2: x, -3: y}: EC2, ES256, P-256.
        data.append(contentsOf: [0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20])
        data.append(key.publicKey.rawRepresentation.prefix(32))
        data.append(contentsOf: [0x22, 0x58, 0x20])
        data.append(key.publicKey.rawRepresentation.suffix(32))
        return (credentialID, data)
    }

    /// `fido_dev_get_assert` for `clientDataHash` at `rpID`; the counter goes
    /// up first. `omittingID`: the key leaves the credential id out, as
    /// CTAP2 allows when it was asked for one only.
    mutating func getAssertion(clientDataHash: Data, rpID: String, omittingID: Bool = false) throws -> (
        id: Data, wrappedAuthenticatorData: Data, signature: Data
    ) {
        signCount += 1
        let data = authenticatorData(rpID: rpID, flags: 0, count: signCount)
        let signature = try key.signature(for: data + clientDataHash).derRepresentation
        // A CBOR byte string: major type 2, a one-byte length (37 < 256).
        return (omittingID ? Data() : credentialID, Data([0x58, UInt8(data.count)]) + data, signature)
    }

    /// rpIdHash, UP (and UV), `flags`, the counter.
    private func authenticatorData(rpID: String, flags: UInt8, count: UInt32) -> Data {
        var data = Data(SHA256.hash(data: Data(rpID.utf8)))
        data.append(flags | 0x01 | (verifiesUser ? 0x04 : 0))
        withUnsafeBytes(of: count.bigEndian) { data.append(contentsOf: $0) }
        return data
    }
}
