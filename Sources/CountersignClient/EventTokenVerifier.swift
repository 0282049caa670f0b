public import CountersignCore
import Foundation
import JWTKit
import NIOHTTP1

/// Verifies event tokens offline with the broker's JWKS.
public struct EventTokenVerifier: Sendable {
    private let keys: JWTKeyCollection
    /// The issuer tokens must name.
    public let issuer: String

    /// A verifier for the key set in `jwksJSON`.
    public init(jwksJSON: String, issuer: String) async throws {
        self.keys = JWTKeyCollection()
        try await keys.add(jwksJSON: jwksJSON)
        self.issuer = issuer
    }

    /// Fetches the broker's JWKS.
    public static func fetch(broker: String) async throws -> EventTokenVerifier {
        struct Raw: Decodable { let keys: [PublicKeyJSON] }
        struct PublicKeyJSON: Codable { let kty, crv, x, y, kid, use, alg: String }
        let connection = BrokerConnection(baseURL: broker)
        let jwks = try await connection.send(.GET, "/.well-known/jwks.json", as: Raw.self)
        let json = String(decoding: try JSONEncoder().encode(["keys": jwks.keys]), as: UTF8.self)
        return try await EventTokenVerifier(jwksJSON: json, issuer: Origin(url: broker)?.description ?? broker)
    }

    /// Checks signature, expiry, issuer and (when given) the app's API key id.
    public func verify(_ token: String, apiKeyID: String? = nil) async throws -> EventTokenClaims {
        let header = try CompactJWS.header(of: token)
        guard header.alg == "ES256" else { throw ProtocolError(.wrongAlgorithm, "event tokens are ES256") }
        let claims = try await keys.verify(token, as: EventTokenClaims.self)
        guard claims.iss == issuer else { throw ProtocolError(.wrongAudience, "the token is from another issuer") }
        if let apiKeyID, claims.aud != apiKeyID {
            throw ProtocolError(.wrongAudience, "the token is for another app")
        }
        return claims
    }
}
