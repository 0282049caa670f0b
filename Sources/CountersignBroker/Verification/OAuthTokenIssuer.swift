import CountersignCore
import CountersignStore
import Foundation
import JWTKit

/// The tokens of a verified identity.
struct OAuthTokens: Encodable, Sendable {
    let accessToken: String
    let idToken: String
    let refreshToken: String
    let expiresIn: Int
    let tokenType = "Bearer"
    let authMethod = "OTP"

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case idToken = "id_token"
        case refreshToken = "refresh_token"
        case expiresIn = "expires_in"
        case tokenType = "token_type"
        case authMethod = "auth_method"
    }
}

/// Mints access, ID and refresh tokens; refresh tokens are stored hashed in
/// a family so that a reused one can revoke them all.
struct OAuthTokenIssuer {
    let environment: BrokerEnvironment
    static let accessTokenLifetime: TimeInterval = 3600
    static let refreshTokenLifetime: TimeInterval = 30 * 86400

    /// Access, ID and a new refresh token, the refresh token stored in `family`.
    func issue(for identity: VerifiedIdentity, family: String, authTime: Date, nonce: String? = nil) async throws
        -> OAuthTokens
    {
        var (secret, record) = newRefreshToken(for: identity, family: family)
        record.authTime = authTime
        try await environment.store.insertRefreshToken(record)
        return try await tokens(for: identity, authTime: authTime, refreshToken: secret, nonce: nonce)
    }

    /// A refresh token: the secret for the client and the record to store.
    func newRefreshToken(for identity: VerifiedIdentity, family: String) -> (String, RefreshTokenRecord) {
        let now = environment.now()
        let secret = SecretToken.generate(bytes: 32)
        return (
            secret,
            RefreshTokenRecord(
                digest: SecretToken.digest(secret), familyID: family, apiKeyID: identity.apiKeyID,
                identityID: identity.id, createdAt: now, expiresAt: now + Self.refreshTokenLifetime)
        )
    }

    /// Signs the access and ID tokens to go with `refreshToken`.
    func tokens(for identity: VerifiedIdentity, authTime: Date, refreshToken: String, nonce: String? = nil)
        async throws -> OAuthTokens
    {
        let now = environment.now()
        let isEmail = identity.identifierType == .email
        var claims = OAuthTokenClaims(
            iss: environment.issuer, sub: identity.userID, aud: identity.apiKeyID, iat: Int(now.timeIntervalSince1970),
            exp: Int((now + Self.accessTokenLifetime).timeIntervalSince1970), jti: SecretToken.generate(bytes: 16),
            tokenType: "access_token", clientID: identity.apiKeyID, scope: "access", authTime: nil,
            identifier: identity.identifier, identifierType: identity.identifierType, authMethod: "OTP")
        let accessToken = try await environment.keys.sign(claims)
        claims.tokenType = "id_token"
        claims.jti = SecretToken.generate(bytes: 16)
        claims.clientID = nil
        claims.scope = nil
        claims.authTime = Int(authTime.timeIntervalSince1970)
        claims.email = isEmail ? identity.identifier : nil
        claims.emailVerified = isEmail ? true : nil
        claims.phoneNumber = isEmail ? nil : identity.identifier
        claims.phoneNumberVerified = isEmail ? nil : true
        claims.nonce = nonce
        let idToken = try await environment.keys.sign(claims)
        return OAuthTokens(
            accessToken: accessToken, idToken: idToken, refreshToken: refreshToken,
            expiresIn: Int(Self.accessTokenLifetime))
    }
}
