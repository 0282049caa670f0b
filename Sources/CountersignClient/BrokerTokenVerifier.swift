public import CountersignCore
import Foundation
import JWTKit
import NIOHTTP1

/// Verifies what the broker signs (event tokens, OAuth access and ID
/// tokens) offline, with the broker's JWKS alone.
///
/// The algorithm is fixed to ES256 and the key is the JWKS key the `kid`
/// names: a token that picks its own algorithm (`none`, `HS256` keyed with a
/// public key) or names an unknown key is refused.
public struct BrokerTokenVerifier: Sendable {
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
    public static func fetch(broker: String) async throws -> BrokerTokenVerifier {
        struct Raw: Decodable { let keys: [PublicKeyJSON] }
        struct PublicKeyJSON: Codable { let kty, crv, x, y, kid, use, alg: String }
        let connection = BrokerConnection(baseURL: broker)
        let jwks = try await connection.send(.GET, "/.well-known/jwks.json", as: Raw.self)
        let json = String(decoding: try JSONEncoder().encode(["keys": jwks.keys]), as: UTF8.self)
        return try await BrokerTokenVerifier(jwksJSON: json, issuer: Origin(url: broker)?.description ?? broker)
    }

    /// An event token: signature, expiry, issuer and (when given) the app's API key id.
    public func verifyEventToken(_ token: String, apiKeyID: String? = nil) async throws -> EventTokenClaims {
        let claims = try await verified(token, as: EventTokenClaims.self)
        try check(issuer: claims.iss, audience: claims.aud, expected: apiKeyID)
        return claims
    }

    /// An OAuth access token for the app `apiKeyID`.
    public func verifyAccessToken(_ token: String, apiKeyID: String) async throws -> OAuthTokenClaims {
        let claims = try await verified(token, as: OAuthTokenClaims.self)
        try check(issuer: claims.iss, audience: claims.aud, expected: apiKeyID)
        guard claims.tokenType == "access_token" else { throw ProtocolError(.wrongType, "not an access token") }
        return claims
    }

    /// An OpenID Connect ID token for the app `apiKeyID`, with the nonce the
    /// app sent, if it sent one.
    public func verifyIDToken(_ token: String, apiKeyID: String, nonce: String? = nil) async throws -> OAuthTokenClaims
    {
        let claims = try await verified(token, as: OAuthTokenClaims.self)
        try check(issuer: claims.iss, audience: claims.aud, expected: apiKeyID)
        guard claims.tokenType == "id_token" else { throw ProtocolError(.wrongType, "not an ID token") }
        guard claims.nonce == nonce else {
            throw ProtocolError(.wrongNonce, "the ID token's nonce is not this request's")
        }
        return claims
    }

    private func verified<Claims: JWTPayload>(_ token: String, as _: Claims.Type) async throws -> Claims {
        let header = try CompactJWS.header(of: token)
        guard header.alg == "ES256" else { throw ProtocolError(.wrongAlgorithm, "broker tokens are ES256") }
        guard let kid = header.kid, (try? await keys.getKey(for: JWKIdentifier(string: kid))) != nil else {
            throw ProtocolError(.wrongDevice, "the token names a key the JWKS does not hold")
        }
        return try await keys.verify(token, as: Claims.self)
    }

    private func check(issuer: String, audience: String, expected: String?) throws {
        guard issuer == self.issuer else { throw ProtocolError(.wrongAudience, "the token is from another issuer") }
        if let expected, audience != expected {
            throw ProtocolError(.wrongAudience, "the token is for another app")
        }
    }
}
