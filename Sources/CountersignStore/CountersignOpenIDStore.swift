public import CountersignCore
public import Foundation

/// What a pending event is stored with, in its transaction: the request
/// that asked for it, when an OpenID client did.
public enum PendingAttachment: Sendable, Equatable {
    /// A CIBA client's request (`/oauth/bc-authorize`).
    case ciba(CIBARequest)
    /// A relying party's sign-in by approval (`/oauth/authorize`).
    case signIn(OpenIDSignIn)
}

/// What sign-in to OpenID Connect apps keeps: the authorization request
/// of each pending login, its single-use code, and whether it was ended.
/// Part of every ``CountersignStore``.
public protocol CountersignOpenIDStore: Sendable {
    /// Registers how an app signs in: its scopes and client type (nil: none
    /// registered, the default). `notFound` for an unknown or revoked key.
    func setOpenIDClient(_ registration: OpenIDClientRegistration?, apiKeyID: String, now: Date) async throws
    /// How an app registered to sign in, or nil.
    func openIDClient(apiKeyID: String) async throws -> OpenIDClientRegistration?
    /// The sign-in of this event, or nil.
    func openIDSignIn(eventID: String) async throws -> OpenIDSignIn?
    /// Gives the sign-in a new authorization code (by digest), replacing
    /// one not spent yet (a reloaded page asks again): `notFound` for no
    /// sign-in, `conflict` once a code was spent or the sign-in ended.
    func issueOpenIDCode(eventID: String, digest: Data, expiresAt: Date) async throws
    /// Spends the code as ``OpenIDCodeRule`` decides, in one transaction:
    /// `spend` marks it spent (and whether the client authenticated,
    /// `confidential`) and stores `refreshToken`, the one the code buys, so
    /// that a code is never spent without it; `replayed` ends the sign-in
    /// and revokes its refresh tokens; the others change nothing. Returns
    /// the verdict and the sign-in as it then stands.
    func redeemOpenIDCode(
        eventID: String, digest: Data, confidential: Bool, refreshToken: RefreshTokenRecord, now: Date
    ) async throws -> (OpenIDCodeRule.Verdict, OpenIDSignIn?)
    /// Ends the sign-in and revokes every refresh token of its family, in
    /// one transaction; false if it was ended before or does not exist.
    @discardableResult
    func endOpenIDSignIn(eventID: String, now: Date) async throws -> Bool
}
