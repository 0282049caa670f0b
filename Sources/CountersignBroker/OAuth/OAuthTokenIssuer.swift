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
        newRefreshToken(apiKeyID: identity.apiKeyID, identityID: identity.id, clientUserID: nil, family: family)
    }

    /// A refresh token of a CIBA grant's family: it names the user.
    func newRefreshToken(replacing record: RefreshTokenRecord) -> (String, RefreshTokenRecord) {
        newRefreshToken(
            apiKeyID: record.apiKeyID, identityID: record.identityID, clientUserID: record.clientUserID,
            family: record.familyID)
    }

    private func newRefreshToken(apiKeyID: String, identityID: String, clientUserID: String?, family: String)
        -> (String, RefreshTokenRecord)
    {
        let now = environment.now()
        let secret = SecretToken.generate(bytes: 32)
        return (
            secret,
            RefreshTokenRecord(
                digest: SecretToken.digest(secret), familyID: family, apiKeyID: apiKeyID, identityID: identityID,
                createdAt: now, expiresAt: now + Self.refreshTokenLifetime, clientUserID: clientUserID)
        )
    }

    /// Access, ID and refresh tokens for a CIBA grant: a trusted device (or
    /// a TOTP code) approved `event`, which the client asked for with
    /// `authReqID`.
    func issue(approved event: ApprovalEvent, authReqID: String) async throws -> OAuthTokens {
        let authTime = event.decidedAt ?? environment.now()
        var (secret, record) = newRefreshToken(
            apiKeyID: event.issuer, identityID: "", clientUserID: event.clientUserID,
            family: RefreshFamily.ciba(eventID: event.id).id)
        record.authTime = authTime
        record.acr = ApprovalAuthentication(of: event).acr
        try await environment.store.insertRefreshToken(record)
        return try await tokens(
            user: event.clientUserID, apiKeyID: event.issuer, authTime: authTime, refreshToken: secret,
            acr: record.acr, authReqID: authReqID)
    }

    /// The refresh token a sign-in by approval's code buys: a trusted
    /// device (or a TOTP code) approved `event`, which `signIn` opened; the
    /// store keeps it in the transaction that spends the code.
    func newRefreshToken(signIn: OpenIDSignIn, approved event: ApprovalEvent) -> (String, RefreshTokenRecord) {
        var (secret, record) = newRefreshToken(
            apiKeyID: signIn.apiKeyID, identityID: "", clientUserID: event.clientUserID, family: signIn.family)
        record.authTime = event.decidedAt ?? environment.now()
        record.acr = ApprovalAuthentication(of: event).acr
        return (secret, record)
    }

    /// Signs the access and ID tokens of a sign-in by approval: the `sub`
    /// of the app's user, the sign-in's `sid`, and the user name when the
    /// `profile` scope was granted.
    func tokens(
        signIn: OpenIDSignIn, user: String, authTime: Date, acr: String?, refreshToken: String, nonce: String? = nil
    ) async throws -> OAuthTokens {
        let now = environment.now()
        var claims = OAuthTokenClaims(
            iss: environment.issuer, sub: OpenIDSubject.of(apiKeyID: signIn.apiKeyID, user: user),
            aud: signIn.apiKeyID, iat: Int(now.timeIntervalSince1970),
            exp: Int((now + Self.accessTokenLifetime).timeIntervalSince1970), jti: SecretToken.generate(bytes: 16),
            tokenType: "access_token", clientID: signIn.apiKeyID, scope: signIn.scope, authTime: nil, identifier: nil,
            identifierType: nil, authMethod: "APPROVAL", acr: acr)
        claims.sid = signIn.eventID
        let (username, email) = signIn.nameClaims(user: user)
        claims.preferredUsername = username
        claims.name = username
        claims.email = email
        claims.emailVerified = email.map { _ in false }
        return try await sign(access: claims, authTime: authTime, refreshToken: refreshToken) {
            $0.nonce = nonce
        }
    }

    /// Signs the access and ID tokens of a CIBA grant for `user`.
    func tokens(
        user: String, apiKeyID: String, authTime: Date, refreshToken: String, acr: String? = nil,
        authReqID: String? = nil
    ) async throws -> OAuthTokens {
        let now = environment.now()
        let claims = OAuthTokenClaims(
            iss: environment.issuer, sub: user, aud: apiKeyID, iat: Int(now.timeIntervalSince1970),
            exp: Int((now + Self.accessTokenLifetime).timeIntervalSince1970), jti: SecretToken.generate(bytes: 16),
            tokenType: "access_token", clientID: apiKeyID, scope: "openid", authTime: nil, identifier: nil,
            identifierType: nil, authMethod: "CIBA", acr: acr)
        return try await sign(access: claims, authTime: authTime, refreshToken: refreshToken) {
            $0.authReqID = authReqID
        }
    }

    /// Signs the access and ID tokens to go with `refreshToken`.
    func tokens(for identity: VerifiedIdentity, authTime: Date, refreshToken: String, nonce: String? = nil)
        async throws -> OAuthTokens
    {
        let now = environment.now()
        let isEmail = identity.identifierType == .email
        let claims = OAuthTokenClaims(
            iss: environment.issuer, sub: identity.userID, aud: identity.apiKeyID, iat: Int(now.timeIntervalSince1970),
            exp: Int((now + Self.accessTokenLifetime).timeIntervalSince1970), jti: SecretToken.generate(bytes: 16),
            tokenType: "access_token", clientID: identity.apiKeyID, scope: "access", authTime: nil,
            identifier: identity.identifier, identifierType: identity.identifierType, authMethod: "OTP")
        return try await sign(access: claims, authTime: authTime, refreshToken: refreshToken) {
            $0.email = isEmail ? identity.identifier : nil
            $0.emailVerified = isEmail ? true : nil
            $0.phoneNumber = isEmail ? nil : identity.identifier
            $0.phoneNumberVerified = isEmail ? nil : true
            $0.nonce = nonce
        }
    }

    /// Signs the access token `access`, then the ID token made of it: its
    /// own id, no `client_id` or `scope`, `auth_time`, and what `idClaims` adds.
    private func sign(
        access: OAuthTokenClaims, authTime: Date, refreshToken: String, idClaims: (inout OAuthTokenClaims) -> Void
    ) async throws -> OAuthTokens {
        let accessToken = try await environment.keys.sign(access)
        var claims = access
        claims.tokenType = "id_token"
        claims.jti = SecretToken.generate(bytes: 16)
        claims.clientID = nil
        claims.scope = nil
        claims.authTime = Int(authTime.timeIntervalSince1970)
        idClaims(&claims)
        let idToken = try await environment.keys.sign(claims)
        return OAuthTokens(
            accessToken: accessToken, idToken: idToken, refreshToken: refreshToken,
            expiresIn: Int(Self.accessTokenLifetime))
    }
}
