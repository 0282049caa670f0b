import CountersignClient
import CountersignCore
import Foundation
import Testing

@Suite("proto/vectors: access and ID tokens")
struct OAuthTokenVectorTests {
    struct Vectors: Decodable {
        struct Test: Decodable, CustomStringConvertible, Sendable {
            let tcId: Int
            let comment: String
            let kind: String
            let token: String
            let nonce: String?
            let result: String
            var description: String { "#\(tcId) \(comment)" }
        }
        struct JWKS: Codable { let keys: [[String: String]] }
        let jwks: JWKS
        let issuer: String
        let audience: String
        let tests: [Test]
    }

    static let vectors: Vectors = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("proto/vectors/oauth-tokens.json")
        return try! JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }()

    @Test("access or ID token", arguments: vectors.tests)
    func token(_ test: Vectors.Test) async throws {
        let vectors = Self.vectors
        let verifier = try await BrokerTokenVerifier(
            jwksJSON: String(decoding: try JSONEncoder().encode(vectors.jwks), as: UTF8.self), issuer: vectors.issuer)
        let accepted: Bool
        if test.kind == "id" {
            accepted =
                (try? await verifier.verifyIDToken(test.token, apiKeyID: vectors.audience, nonce: test.nonce)) != nil
        } else {
            accepted = (try? await verifier.verifyAccessToken(test.token, apiKeyID: vectors.audience)) != nil
        }
        #expect(accepted == (test.result == "valid"))
    }
}
