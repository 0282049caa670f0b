import CountersignCore
import CountersignSenders
import Foundation
import Testing

/// proto/vectors/webhooks.json: messages signed by the `standardwebhooks`
/// package (scripts/generate-webhook-vectors.py), with the verdict of its
/// receiver.
struct WebhookVectorFile: Decodable {
    struct Test: Decodable, CustomStringConvertible, Sendable {
        let tcId: Int
        let comment: String
        let secrets: [String]
        let id: String
        let timestamp: Int
        let body: String
        let signature: String
        let receiver_secret: String
        let received_body: String
        let result: String
        var description: String { "#\(tcId): \(comment)" }
    }
    let tests: [Test]

    static let shared = try! JSONDecoder().decode(Self.self, from: Data(contentsOf: vectorFile("webhooks.json")))
}

@Suite("proto/vectors: Standard Webhooks signatures")
struct WebhookVectorTests {
    /// HMAC is deterministic: the broker's signature of the message must be
    /// the independent implementation's, byte for byte.
    @Test(arguments: WebhookVectorFile.shared.tests)
    func sameSignature(_ test: WebhookVectorFile.Test) throws {
        let secrets = try test.secrets.map { try #require(WebhookSecret($0)) }
        let signature = StandardWebhook.signature(
            id: test.id, timestamp: test.timestamp, body: Data(test.body.utf8), secrets: secrets)
        #expect(signature == test.signature)
        // What the receiver recomputes from what it got, with its secret.
        let receiver = try #require(WebhookSecret(test.receiver_secret))
        let recomputed = StandardWebhook.signature(
            id: test.id, timestamp: test.timestamp, body: Data(test.received_body.utf8), secrets: [receiver])
        let signatureMatches = signature.split(separator: " ").contains { $0 == recomputed }
        if test.comment.contains("five minutes") || test.comment.contains("future") {
            #expect(signatureMatches && test.result == "invalid", "refused for its time alone")
        } else {
            #expect(signatureMatches == (test.result == "valid"))
        }
    }

    @Test("secrets: whsec_ and base64 of 24 to 64 bytes; a new one is 32 random bytes and reads back")
    func secrets() {
        let new = WebhookSecret.generate()
        #expect(new.key.count == 32 && WebhookSecret(new.text) == new && new.text.hasPrefix("whsec_"))
        #expect(WebhookSecret("whsec_" + Data(count: 23).base64EncodedString()) == nil)
        #expect(WebhookSecret("whsec_" + Data(count: 65).base64EncodedString()) == nil)
        #expect(WebhookSecret(Data(count: 32).base64EncodedString()) == nil, "the prefix is required")
        #expect(WebhookSecret("whsec_not base64!") == nil)
    }
}
