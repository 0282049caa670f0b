import CountersignClient
import CountersignCore
import Foundation
import Testing

@Suite("proto/vectors: event tokens")
struct EventTokenVectorTests {
    struct Vectors: Decodable {
        struct Test: Decodable, CustomStringConvertible, Sendable {
            let tcId: Int
            let comment: String
            let token: String
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
            .deletingLastPathComponent().appendingPathComponent("proto/vectors/event-tokens.json")
        return try! JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }()

    @Test("event token", arguments: vectors.tests)
    func token(_ test: Vectors.Test) async throws {
        let vectors = Self.vectors
        let verifier = try await BrokerTokenVerifier(
            jwksJSON: String(decoding: try JSONEncoder().encode(vectors.jwks), as: UTF8.self), issuer: vectors.issuer)
        let accepted = (try? await verifier.verifyEventToken(test.token, apiKeyID: vectors.audience)) != nil
        #expect(accepted == (test.result == "valid"))
    }
}
