public import CountersignCore
public import Foundation

/// The changes of a sign-in by approval, written once above every store:
/// each is a rule of Core (``OpenIDCodeRule``, ``OpenIDSignIn``) applied in
/// the store's updater, ``CountersignOpenIDStore/updateOpenIDSignIn(eventID:_:)``.
extension CountersignOpenIDStore {
    /// Gives the sign-in a new authorization code (by digest), replacing
    /// one not spent yet (a reloaded page asks again): `notFound` for no
    /// sign-in, `conflict` once a code was spent or the sign-in ended.
    public func issueOpenIDCode(eventID: String, digest: Data, expiresAt: Date) async throws {
        _ = try await updateOpenIDSignIn(eventID: eventID) { signIn in
            guard let issued = signIn.issuingCode(digest: digest, expiresAt: expiresAt) else {
                throw StoreError(.conflict, "the sign-in's code was spent")
            }
            return (OpenIDSignInChange(issued), ())
        }
    }

    /// Spends the code as ``OpenIDCodeRule/redemption(of:digest:confidential:buying:now:)``
    /// decides, in one transaction: `spend` marks it spent (and whether the
    /// client authenticated, `confidential`) and stores `refreshToken`, the
    /// one the code buys (nil: the sign-in's login is gone, and the code
    /// buys nothing); `replayed` ends the sign-in and revokes its refresh
    /// tokens; the others change nothing. Returns the verdict and the
    /// sign-in as it then stands (`unknown` and nil for no sign-in).
    public func redeemOpenIDCode(
        eventID: String, digest: Data, confidential: Bool, buying refreshToken: RefreshTokenRecord?, now: Date
    ) async throws -> (OpenIDCodeRule.Verdict, OpenIDSignIn?) {
        do {
            let (signIn, verdict) = try await updateOpenIDSignIn(eventID: eventID) { signIn in
                let (verdict, change) = OpenIDCodeRule.redemption(
                    of: signIn, digest: digest, confidential: confidential, buying: refreshToken, now: now)
                return (change, verdict)
            }
            return (verdict, signIn)
        } catch let error as StoreError where error.code == .notFound {
            return (.unknown, nil)
        }
    }

    /// Ends the sign-in and revokes every refresh token of its family, in
    /// one transaction; false if it was ended before or does not exist.
    @discardableResult
    public func endOpenIDSignIn(eventID: String, now: Date) async throws -> Bool {
        do {
            return try await updateOpenIDSignIn(eventID: eventID) { signIn in
                guard let ended = signIn.ending(at: now) else { return (OpenIDSignInChange(signIn), false) }
                return (OpenIDSignInChange(ended), true)
            }.1
        } catch let error as StoreError where error.code == .notFound {
            return false
        }
    }
}
