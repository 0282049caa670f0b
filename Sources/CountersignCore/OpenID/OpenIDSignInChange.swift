public import Foundation

/// What a change of a sign-in by approval writes, as the store's updater
/// takes it: the row as it is to be, and the refresh token stored with it.
/// The rules that make one are here, written once for every store.
public struct OpenIDSignInChange: Sendable, Equatable {
    /// The sign-in as it is to be.
    public var signIn: OpenIDSignIn
    /// A refresh token stored in the same transaction: the one a spent
    /// code buys, so that no code is spent without it.
    public var storing: RefreshTokenRecord?

    public init(_ signIn: OpenIDSignIn, storing: RefreshTokenRecord? = nil) {
        self.signIn = signIn
        self.storing = storing
    }
}

extension OpenIDSignIn {
    /// The sign-in with a new code (a reloaded page asks again), replacing
    /// one not spent yet; nil once a code was spent or the sign-in ended.
    public func issuingCode(digest: Data, expiresAt: Date) -> OpenIDSignIn? {
        guard redeemedAt == nil, endedAt == nil else { return nil }
        var after = self
        after.codeDigest = digest
        after.codeExpiresAt = expiresAt
        return after
    }

    /// The sign-in ended at `now` (signed out, or a spent code presented
    /// again): every refresh token of its family stops working with it.
    /// Nil if it was ended before.
    public func ending(at now: Date) -> OpenIDSignIn? {
        guard endedAt == nil else { return nil }
        var after = self
        after.endedAt = now
        return after
    }
}

extension OpenIDCodeRule {
    /// A code presented at the token endpoint, on the sign-in as the
    /// store's transaction reads it: the verdict (``decide(_:digest:now:)``)
    /// and the change it makes. A spend marks the code spent, by a client
    /// that proved its secret or not (`confidential`), and stores
    /// `refreshToken`, the one it buys; a replay ends the sign-in; the others
    /// change nothing. With no refresh token to buy (the login the sign-in
    /// opened was collected while its refresh tokens live on) the code buys
    /// nothing, but a replay of it still ends the sign-in.
    public static func redemption(
        of signIn: OpenIDSignIn, digest: Data, confidential: Bool, buying refreshToken: RefreshTokenRecord?,
        now: Date
    ) -> (Verdict, OpenIDSignInChange) {
        switch decide(signIn, digest: digest, now: now) {
        case .spend:
            guard let refreshToken else { return (.unknown, OpenIDSignInChange(signIn)) }
            var spent = signIn
            spent.redeemedAt = now
            spent.confidential = confidential
            return (.spend, OpenIDSignInChange(spent, storing: refreshToken))
        case .replayed:
            return (.replayed, OpenIDSignInChange(signIn.ending(at: now) ?? signIn))
        case let other:
            return (other, OpenIDSignInChange(signIn))
        }
    }
}
