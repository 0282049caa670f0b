public import Foundation

/// What a step of an email or phone verification does to its challenge,
/// as read inside the store's transaction: the rule both stores apply
/// before writing what it says.
public enum ChallengeStep: Sendable, Equatable {
    /// Replace the code and count the send.
    case resend
    /// The code matches: mark the challenge verified and keep the digest of
    /// its authorization code.
    case verify
    /// The code does not match: count a failure.
    case countFailure
    /// Spend the authorization code.
    case redeem
    /// Change nothing.
    case refused(ChallengeRefusal)
}

/// Why a verification step changes nothing.
public enum ChallengeRefusal: Sendable, Equatable {
    /// No such challenge.
    case unknownChallenge
    /// No challenge has this authorization code.
    case unknownCode
    /// Verified already, or dead after too many wrong codes, or its code
    /// expired.
    case finished
    /// The code was sent `maxSends` times; the last one works until it
    /// expires, in `retryAfter` seconds.
    case sentTooOften(maxSends: Int, retryAfter: Int)
    /// The authorization code was used, or has expired.
    case usedOrExpired
}

extension VerificationChallenge {
    /// Where a challenge stands at `now`.
    public enum Standing: Sendable, Equatable {
        /// It takes a code: `attemptsLeft` wrong ones close it.
        case open(attemptsLeft: Int)
        /// A right code was typed: it takes no more.
        case verified
        /// Closed after `maxAttempts` wrong codes.
        case closedAfterWrongCodes
        /// Its code expired; a new one can be sent.
        case codeExpired
    }

    /// Where the challenge stands at `now`, given the wrong codes it takes.
    public func standing(maxAttempts: Int, now: Date) -> Standing {
        if verifiedAt != nil { return .verified }
        if failedAttempts >= maxAttempts { return .closedAfterWrongCodes }
        if codeExpiresAt <= now { return .codeExpired }
        return .open(attemptsLeft: maxAttempts - failedAttempts)
    }
}

/// The rules of a verification's steps. Pure: the store runs them on the
/// challenge it read and writes what they return.
public enum VerificationRules {
    /// Sending a new code: while the challenge is neither verified nor dead,
    /// at most `maxSends` times.
    public static func resend(_ current: VerificationChallenge?, maxSends: Int, maxAttempts: Int, now: Date)
        -> ChallengeStep
    {
        guard let current else { return .refused(.unknownChallenge) }
        switch current.standing(maxAttempts: maxAttempts, now: now) {
        case .verified, .closedAfterWrongCodes: return .refused(.finished)
        case .open, .codeExpired: break
        }
        guard current.sends < maxSends else {
            let retryAfter = max(1, Int(current.codeExpiresAt.timeIntervalSince(now).rounded(.up)))
            return .refused(.sentTooOften(maxSends: maxSends, retryAfter: retryAfter))
        }
        return .resend
    }

    /// A typed code (its digest): while the challenge is open and its code
    /// unexpired, a match verifies and anything else counts a failure.
    public static func submit(_ current: VerificationChallenge?, codeDigest: Data, maxAttempts: Int, now: Date)
        -> ChallengeStep
    {
        guard let current else { return .refused(.unknownChallenge) }
        guard case .open = current.standing(maxAttempts: maxAttempts, now: now) else { return .refused(.finished) }
        return SecretToken.constantTimeEquals(current.codeDigest, codeDigest) ? .verify : .countFailure
    }

    /// An authorization code (its digest) presented for redemption: once,
    /// before it expires.
    public static func redeem(_ current: VerificationChallenge?, digest: Data, now: Date) -> ChallengeStep {
        guard let current, let stored = current.authorizationCodeDigest,
            SecretToken.constantTimeEquals(stored, digest)
        else { return .refused(.unknownCode) }
        guard current.redeemedAt == nil, let expiry = current.authorizationCodeExpiresAt, expiry > now else {
            return .refused(.usedOrExpired)
        }
        return .redeem
    }
}
