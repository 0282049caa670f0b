import CountersignCore
import CountersignStore
import Foundation

/// What a sign-in by approval's authorization code and refresh tokens buy
/// at the token endpoint.
struct OpenIDSignInGrant {
    let environment: BrokerEnvironment

    /// Spends a code for `client` (RFC 6749 §4.1.3, RFC 7636 §4.6): the
    /// same client and redirect URI as the authorization request, and the
    /// PKCE verifier of its challenge; a confidential app (every app not
    /// registered as public) authenticates first, so a request without its
    /// secret reads nothing of the code and spends nothing. A code spent
    /// twice may be stolen: the store ends the sign-in it bought
    /// (``OpenIDCodeRule``).
    func redeem(code: String, verifier: String, redirectURI: String, client: OAuthClient) async throws
        -> (OAuthTokens, scope: String)
    {
        // An app whose registration was removed since is confidential.
        let registration =
            try await environment.store.openIDClient(apiKeyID: client.key.id) ?? OpenIDClientRegistration(scopes: [])
        if let refusal = registration.refusal(authenticated: client.authenticated) {
            throw APIError.oauth(.invalidClient, refusal)
        }
        let unknown = APIError.oauth(.invalidGrant, "the authorization code is unknown, expired or already used")
        guard let parsed = OpenIDSignIn.parse(code: code),
            let signIn = try await environment.store.openIDSignIn(eventID: parsed.eventID),
            signIn.apiKeyID == client.key.id
        else { throw unknown }
        guard redirectURI == signIn.redirectURI else {
            throw APIError.oauth(.invalidGrant, "redirect_uri must be the one the authorization request named")
        }
        guard PKCE.verify(verifier: verifier, challenge: signIn.codeChallenge) else {
            throw APIError.oauth(.invalidGrant, "the code_verifier does not match the code_challenge (S256)")
        }
        let now = environment.now()
        // A code is issued only once its login was approved, which no
        // later write undoes: read before spending it, so that the refresh
        // token it buys is stored in the same transaction. A login that is
        // gone (collected while the sign-in's refresh tokens live on) buys
        // nothing; the rule still ends the sign-in on a replay.
        let approved = try await environment.store.event(id: signIn.eventID).flatMap {
            $0.status(at: now) == .approved ? $0 : nil
        }
        let issuer = OAuthTokenIssuer(environment: environment)
        let bought = approved.map { issuer.newRefreshToken(signIn: signIn, approved: $0) }
        let (verdict, stands) = try await environment.store.redeemOpenIDCode(
            eventID: signIn.eventID, digest: SecretToken.digest(code), confidential: client.authenticated,
            buying: bought?.1, now: now)
        guard verdict == .spend, let redeemed = stands, let event = approved, let (secret, refreshToken) = bought
        else { throw unknown }
        let tokens = try await issuer.tokens(
            signIn: redeemed, user: event.clientUserID, authTime: refreshToken.authTime ?? now, acr: refreshToken.acr,
            refreshToken: secret, nonce: redeemed.nonce)
        return (tokens, redeemed.scope)
    }

    /// The sign-in of a refresh-token family, unless it was ended; a
    /// client that spent its code with its secret refreshes with it too,
    /// and so does a confidential app (as registered now: a sign-in spent
    /// while the app was public does not refresh without the secret once
    /// it is not).
    @discardableResult
    func requireOpen(eventID: String, client: OAuthClient) async throws -> OpenIDSignIn {
        guard let signIn = try await environment.store.openIDSignIn(eventID: eventID), signIn.endedAt == nil else {
            throw APIError.oauth(.invalidGrant, "the sign-in of this refresh token has ended (signed out)")
        }
        guard !client.authenticated else { return signIn }
        if signIn.confidential {
            throw APIError.oauth(
                .invalidClient, "this client spent its code with its secret: refresh with the secret too")
        }
        let registration =
            try await environment.store.openIDClient(apiKeyID: client.key.id) ?? OpenIDClientRegistration(scopes: [])
        if let refusal = registration.refusal(authenticated: false) { throw APIError.oauth(.invalidClient, refusal) }
        return signIn
    }

    /// New tokens for a refresh token of sign-in `eventID`, unless it
    /// was ended (checked again after the rotation: a sign-out meanwhile
    /// issues nothing).
    func refreshed(_ rotated: RefreshTokenRecord, of eventID: String, secret: String, client: OAuthClient)
        async throws -> (OAuthTokens, scope: String)
    {
        let signIn = try await requireOpen(eventID: eventID, client: client)
        guard let user = rotated.clientUserID else {
            throw APIError.oauth(.invalidGrant, "the sign-in of this refresh token has ended (signed out)")
        }
        let tokens = try await OAuthTokenIssuer(environment: environment).tokens(
            signIn: signIn, user: user, authTime: rotated.authTime ?? rotated.createdAt, acr: rotated.acr,
            refreshToken: secret)
        return (tokens, signIn.scope)
    }
}
