public import CountersignCore

/// The verification rules' refusals as the store contract's errors, for the
/// stores to throw from inside their transactions.
extension ChallengeStep {
    /// The step to write, or the contract's error for a refusal.
    public func orThrow() throws -> ChallengeStep {
        guard case .refused(let refusal) = self else { return self }
        switch refusal {
        case .unknownChallenge: throw StoreError(.notFound, "no such verification")
        case .unknownCode: throw StoreError(.notFound, "no such authorization code")
        case .finished: throw StoreError(.conflict, "the verification is finished or its code expired")
        case .sentTooOften(let maxSends, let retryAfter):
            throw StoreError(.limitReached(retryAfter: retryAfter), "the code was sent \(maxSends) times")
        case .usedOrExpired: throw StoreError(.conflict, "the authorization code was used or has expired")
        }
    }
}
