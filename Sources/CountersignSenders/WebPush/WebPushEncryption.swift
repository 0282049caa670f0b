public import Crypto
public import Foundation

/// Encrypts a push message to a subscription's keys with the `aes128gcm`
/// content coding of RFC 8188, keyed as RFC 8291 says: a fresh ECDH key and
/// salt per message, so two messages never share a content key.
///
/// Written on swift-crypto's ECDH, HKDF and AES-GCM: no maintained Swift
/// package for Web Push is among our dependencies, and the whole scheme is
/// these three calls around a 86-byte header.
public enum WebPushEncryption {
    /// The record size announced in the header; one record holds any
    /// payload a push service takes (4096 bytes at most).
    public static let recordSize: UInt32 = 4096
    /// The largest plaintext that fits in one record after the padding
    /// delimiter and the tag, within the 4096 bytes push services accept.
    public static let maxPlaintext = 4096 - 86 - 16 - 1

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The encrypted body: header (salt, record size, the sender's public
    /// key) and the one record. `senderKey` and `salt` are made fresh unless
    /// given (vectors fix them).
    public static func encrypt(
        _ plaintext: Data, p256dh: Data, auth: Data,
        senderKey: P256.KeyAgreement.PrivateKey = P256.KeyAgreement.PrivateKey(),
        salt: Data = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
    ) throws -> Data {
        guard plaintext.count <= maxPlaintext else {
            throw Failure(description: "a push payload takes at most \(maxPlaintext) bytes")
        }
        guard salt.count == 16, auth.count == 16,
            let receiver = try? P256.KeyAgreement.PublicKey(x963Representation: p256dh)
        else { throw Failure(description: "the subscription's keys are unusable") }
        let senderPublic = senderKey.publicKey.x963Representation
        let shared = try senderKey.sharedSecretFromKeyAgreement(with: receiver)
        // RFC 8291 §3.3-3.4: IKM from the ECDH secret, salted with the auth
        // secret and bound to both public keys.
        let ikm = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: auth, sharedInfo: Data("WebPush: info\0".utf8) + p256dh + senderPublic,
            outputByteCount: 32)
        // RFC 8188 §2.2-2.3.
        let contentKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Data("Content-Encoding: aes128gcm\0".utf8), outputByteCount: 16)
        let nonce = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Data("Content-Encoding: nonce\0".utf8), outputByteCount: 12)
        // The last (and only) record ends with the delimiter 0x02 and no padding.
        let sealed = try AES.GCM.seal(
            plaintext + [0x02], using: contentKey,
            nonce: try AES.GCM.Nonce(data: nonce.withUnsafeBytes { Data($0) }))
        var body = salt
        withUnsafeBytes(of: recordSize.bigEndian) { body.append(contentsOf: $0) }
        body.append(UInt8(senderPublic.count))
        body.append(senderPublic)
        body.append(sealed.ciphertext)
        body.append(sealed.tag)
        return body
    }
}
