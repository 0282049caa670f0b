public import CountersignCore
public import Foundation

/// Email and phone verification through the hosted page: its challenges,
/// the identities they verify, and the refresh tokens issued for them.
/// Part of every ``CountersignStore``.
public protocol CountersignVerificationStore: Sendable {
    /// Inserts a challenge unless, since `now - limits.window`, its
    /// identifier started `limits.perIdentifier` challenges or its address
    /// `limits.perAddress`; then `limitReached(retryAfter:)`.
    func insertChallenge(_ challenge: VerificationChallenge, limits: ChallengeLimits, now: Date) async throws
    /// The challenge with this id, or nil.
    func challenge(id: Int64) async throws -> VerificationChallenge?
    /// Replaces the code of a challenge that is unverified and not dead
    /// (fewer than `maxAttempts` failures), counting the send; the failure
    /// count is kept. `conflict` if verified or dead, `limitReached` once it
    /// was sent `maxSends` times, `notFound` for an unknown id.
    func resendCode(
        challengeID: Int64, codeDigest: Data, codeExpiresAt: Date, maxSends: Int, maxAttempts: Int, now: Date
    ) async throws -> VerificationChallenge
    /// Checks a typed code in one transaction. If the challenge is verified,
    /// dead or its code expired: `conflict`, nothing changes. A matching
    /// digest verifies it and stores the authorization code's digest; any
    /// other counts a failure. Returns the challenge after the write.
    func submitCode(
        challengeID: Int64, codeDigest: Data, authorizationCodeDigest: Data, authorizationCodeExpiresAt: Date,
        maxAttempts: Int, now: Date
    ) async throws -> VerificationChallenge
    /// Redeems the authorization code once. `notFound` if the challenge has
    /// no authorization code with this digest; `conflict` if it was redeemed
    /// before or has expired (nothing changes).
    func redeemAuthorizationCode(challengeID: Int64, digest: Data, now: Date) async throws -> VerificationChallenge

    /// The identity of this identifier for this app, created (with a new
    /// user) the first time; `updatedAt` moves to `now`.
    func verifiedIdentity(
        apiKeyID: String, type: IdentifierType, identifier: String, now: Date
    ) async throws -> VerifiedIdentity

    /// The identity with this id, or nil.
    func verifiedIdentity(id: String) async throws -> VerifiedIdentity?

    /// Stores a refresh token; `alreadyExists` for a digest seen before.
    func insertRefreshToken(_ token: RefreshTokenRecord) async throws
    /// The refresh token with this digest, or nil.
    func refreshToken(digest: Data) async throws -> RefreshTokenRecord?
    /// Rotates a refresh token: if the one with `digest` is live (not
    /// rotated, revoked or expired at `now`), marks it rotated and stores
    /// `replacement` in its family (keeping the old one's `authTime`), in
    /// one transaction. If it was rotated or
    /// revoked before, it is being reused: the whole family is revoked and
    /// `conflict` thrown. `notFound` for an unknown or expired token.
    func rotateRefreshToken(digest: Data, replacement: RefreshTokenRecord, now: Date) async throws
        -> RefreshTokenRecord
    /// Revokes every token of a family at `now`; returns how many were live.
    @discardableResult
    func revokeRefreshTokenFamily(_ familyID: String, now: Date) async throws -> Int
}

extension CountersignVerificationStore {
    /// Ends a rotation after its transaction: the new token, or, for a
    /// reused one, its family revoked in a transaction of its own (the
    /// verdict must outlive the refusal) and then `conflict`.
    public func finish(_ rotation: RefreshRotation, now: Date) async throws -> RefreshTokenRecord {
        switch rotation {
        case .rotated(let next):
            return next
        case .unknown:
            throw StoreError(.notFound, "unknown or expired refresh token")
        case .reused(let family):
            try await revokeRefreshTokenFamily(family, now: now)
            throw StoreError(.conflict, "refresh token reused; its family is revoked")
        }
    }
}
