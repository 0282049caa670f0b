import CountersignCore
import CountersignSenders
import Crypto
import Foundation
import Testing

/// proto/vectors/web-push.json: payloads encrypted by Python's http_ece
/// (scripts/generate-push-vectors.py) with fixed keys and salts.
struct WebPushVectorFile: Decodable {
    struct Test: Decodable, CustomStringConvertible, Sendable {
        let tcId: Int
        let comment: String
        let plaintext: String
        let p256dh: String
        let auth: String
        let sender_private_key: String
        let salt: String
        let body: String
        var description: String { "#\(tcId): \(comment)" }
    }
    let tests: [Test]

    static let shared = try! JSONDecoder().decode(Self.self, from: Data(contentsOf: vectorFile("web-push.json")))
}

@Suite("proto/vectors: Web Push encryption (RFC 8291)")
struct WebPushVectorTests {
    /// AES-GCM is deterministic for a fixed key and nonce, so the same keys
    /// and salt must give exactly the independent implementation's bytes.
    @Test(arguments: WebPushVectorFile.shared.tests)
    func sameBytesAsTheIndependentImplementation(_ test: WebPushVectorFile.Test) throws {
        let sender = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: try #require(Base64URL.decode(test.sender_private_key)))
        let body = try WebPushEncryption.encrypt(
            try #require(Base64URL.decode(test.plaintext)), p256dh: try #require(Base64URL.decode(test.p256dh)),
            auth: try #require(Base64URL.decode(test.auth)), senderKey: sender,
            salt: try #require(Base64URL.decode(test.salt)))
        #expect(Base64URL.encode(body) == test.body)
    }

    @Test func aPayloadTooLargeForOneRecordIsRefused() throws {
        let test = WebPushVectorFile.shared.tests[0]
        #expect(throws: WebPushEncryption.Failure.self) {
            try WebPushEncryption.encrypt(
                Data(count: WebPushEncryption.maxPlaintext + 1), p256dh: Base64URL.decode(test.p256dh)!,
                auth: Base64URL.decode(test.auth)!)
        }
    }

    @Test func eachMessageHasItsOwnKeyAndSalt() throws {
        let test = WebPushVectorFile.shared.tests[0]
        let first = try WebPushEncryption.encrypt(
            Data("same".utf8), p256dh: Base64URL.decode(test.p256dh)!, auth: Base64URL.decode(test.auth)!)
        let second = try WebPushEncryption.encrypt(
            Data("same".utf8), p256dh: Base64URL.decode(test.p256dh)!, auth: Base64URL.decode(test.auth)!)
        #expect(first.prefix(16) != second.prefix(16), "a fresh salt")
        #expect(first[21..<86] != second[21..<86], "a fresh sender key")
    }
}
