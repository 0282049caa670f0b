import CountersignClient
import CountersignCore
import Foundation
import Testing

/// A file of proto/vectors.
func vectorFile(_ name: String) -> URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("proto/vectors/\(name)")
}

/// A token vector file of proto/vectors: a JWKS, the issuer and app they are
/// for, and the cases.
struct TokenVectorFile: Decodable {
    struct Test: Decodable, CustomStringConvertible, Sendable {
        let tcId: Int
        let comment: String
        let token: String
        let result: String
        /// `access` or `id`, in oauth-tokens.json.
        let kind: String?
        /// The request's nonce, for ID tokens.
        let nonce: String?
        var description: String { "#\(tcId) \(comment)" }
    }
    struct JWKS: Codable { let keys: [[String: String]] }
    let jwks: JWKS
    let issuer: String
    let audience: String
    let tests: [Test]

    static func load(_ name: String) -> Self {
        try! JSONDecoder().decode(Self.self, from: Data(contentsOf: vectorFile(name)))
    }

    func verifier() async throws -> BrokerTokenVerifier {
        try await BrokerTokenVerifier(
            jwksJSON: String(decoding: try JSONEncoder().encode(jwks), as: UTF8.self), issuer: issuer)
    }
}

@Suite("proto/vectors: event, access and ID tokens")
struct TokenVectorTests {
    static let eventTokens = TokenVectorFile.load("event-tokens.json")
    static let oauthTokens = TokenVectorFile.load("oauth-tokens.json")

    @Test("event token", arguments: eventTokens.tests)
    func eventToken(_ test: TokenVectorFile.Test) async throws {
        let vectors = Self.eventTokens
        let verifier = try await vectors.verifier()
        let accepted = (try? await verifier.verifyEventToken(test.token, apiKeyID: vectors.audience)) != nil
        #expect(accepted == (test.result == "valid"))
    }

    @Test("access or ID token", arguments: oauthTokens.tests)
    func oauthToken(_ test: TokenVectorFile.Test) async throws {
        let vectors = Self.oauthTokens
        let verifier = try await vectors.verifier()
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
