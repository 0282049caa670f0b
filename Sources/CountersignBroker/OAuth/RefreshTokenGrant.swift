import CountersignCore
import CountersignStore
import Foundation

/// What a refresh token buys at the token endpoint (RFC 6749 §6): it is
/// rotated at every use, and a rotated one presented again revokes every
/// token of its grant. A CIBA grant's client refreshes with its secret; a
/// sign-in's stops at its sign-out (``OpenIDSignInGrant``).
struct RefreshTokenGrant {
    let environment: BrokerEnvironment

    func refresh(_ presented: String?, client: OAuthClient) async throws -> (OAuthTokens, scope: String) {
        guard let presented else {
            throw APIError.oauth(.invalidRequest, "refresh_token is required")
        }
        let digest = SecretToken.digest(presented)
        guard let record = try await environment.store.refreshToken(digest: digest), record.apiKeyID == client.key.id
        else {
            throw APIError.oauth(.invalidGrant, "unknown refresh token")
        }
        // The sign-in whose tokens these are, if any.
        let signIn: String? =
            if case .signIn(let eventID) = RefreshFamily(record.familyID) { eventID } else { nil }
        // A CIBA grant's client is confidential: its refresh needs the
        // secret too. A sign-in's client may be public.
        if record.clientUserID != nil, signIn == nil, !client.authenticated {
            throw APIError.oauth(.invalidClient, "authenticate with the client secret to refresh a CIBA grant")
        }
        if let signIn {
            try await OpenIDSignInGrant(environment: environment).requireOpen(eventID: signIn, client: client)
        }
        let identity: VerifiedIdentity?
        if record.clientUserID == nil {
            guard let found = try await environment.store.verifiedIdentity(id: record.identityID) else {
                throw APIError.oauth(.invalidGrant, "unknown refresh token")
            }
            identity = found
        } else {
            identity = nil
        }
        let issuer = OAuthTokenIssuer(environment: environment)
        let (secret, replacement) =
            identity.map { issuer.newRefreshToken(for: $0, family: record.familyID) }
            ?? issuer.newRefreshToken(replacing: record)
        let rotated: RefreshTokenRecord
        do {
            rotated = try await environment.store.rotateRefreshToken(
                digest: digest, replacement: replacement, now: environment.now())
        } catch let error as StoreError where error.code == .conflict {
            // A sign-in's access tokens stop at userinfo too.
            if let signIn { try await environment.store.endOpenIDSignIn(eventID: signIn, now: environment.now()) }
            throw APIError.oauth(
                .invalidGrant, "this refresh token was already used; every token of its grant is revoked")
        } catch let error as StoreError where error.code == .notFound {
            throw APIError.oauth(.invalidGrant, "the refresh token has expired")
        }
        let authTime = rotated.authTime ?? record.createdAt
        if let signIn {
            return try await OpenIDSignInGrant(environment: environment).refreshed(
                rotated, of: signIn, secret: secret, client: client)
        }
        if let identity {
            return (try await issuer.tokens(for: identity, authTime: authTime, refreshToken: secret), "openid")
        }
        let tokens = try await issuer.tokens(
            user: record.clientUserID ?? "", apiKeyID: record.apiKeyID, authTime: authTime, refreshToken: secret,
            acr: rotated.acr)
        return (tokens, "openid")
    }
}
