public import CountersignCore

/// The start and pending-event limits' refusals as the store contract's
/// error, for the stores to throw from inside their transactions.
extension ChallengeStart {
    public func orThrow() throws {
        if case .refuse(let limit, let retryAfter) = self {
            throw StoreError(.limitReached(retryAfter: retryAfter), "too many codes sent to this \(limit.rawValue)")
        }
    }
}

extension PendingCap.Verdict {
    public func orThrow() throws {
        switch self {
        case .admit: return
        case .refuse(.userProtected, let retryAfter):
            throw StoreError(.userProtected(retryAfter: retryAfter), PendingCap.Limit.userProtected.message)
        case .refuse(let limit, let retryAfter):
            throw StoreError(.limitReached(retryAfter: retryAfter), limit.message)
        }
    }
}
