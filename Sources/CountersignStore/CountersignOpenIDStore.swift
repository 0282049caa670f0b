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
    /// The updater of a sign-in, as ``CountersignStore/updateEvent(id:spending:now:_:)``
    /// is of an event: a change a rule above the store decides (a new code,
    /// a code spent or replayed, a sign-out), written once for every store.
    ///
    /// In one write transaction: reads the sign-in of event `eventID`, with
    /// every other change of it held off until commit, hands it to
    /// `change`, and writes what `change` returns: the row's code (digest
    /// and expiry), `redeemed_at`, `confidential` and `ended_at`; the
    /// refresh token to store with it, if any; and, when the change ends
    /// the sign-in (`endedAt` set where it was nil), the revocation of every
    /// refresh token of its family. `notFound` for no sign-in. Whatever
    /// `change` throws leaves everything as it was and reaches the caller as
    /// thrown; `change` runs once. Returns the sign-in as written and what
    /// `change` said of it.
    func updateOpenIDSignIn<Outcome: Sendable>(
        eventID: String, _ change: @escaping @Sendable (OpenIDSignIn) throws -> (OpenIDSignInChange, Outcome)
    ) async throws -> (OpenIDSignIn, Outcome)
}
