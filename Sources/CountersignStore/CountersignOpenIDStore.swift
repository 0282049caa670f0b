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
    /// Registers the scopes an app signs in with (nil: none registered, the
    /// default). `notFound` for an unknown or revoked key.
    func setOpenIDScopes(_ scopes: [String]?, apiKeyID: String, now: Date) async throws
    /// The scopes an app registered for sign-in, or nil.
    func openIDScopes(apiKeyID: String) async throws -> [String]?
    /// The sign-in of this event, or nil.
    func openIDSignIn(eventID: String) async throws -> OpenIDSignIn?
    /// Gives the sign-in its authorization code (by digest), once: `notFound`
    /// for no sign-in, `conflict` if it has a code already.
    func issueOpenIDCode(eventID: String, digest: Data, expiresAt: Date) async throws
    /// Spends the code once and returns the sign-in: `notFound` if the
    /// sign-in has no code with this digest; `conflict` if it was spent
    /// before, has expired or the sign-in was ended (nothing changes).
    func redeemOpenIDCode(eventID: String, digest: Data, now: Date) async throws -> OpenIDSignIn
    /// Ends the sign-in and revokes every refresh token of its family, in
    /// one transaction; false if it was ended before or does not exist.
    @discardableResult
    func endOpenIDSignIn(eventID: String, now: Date) async throws -> Bool
}
