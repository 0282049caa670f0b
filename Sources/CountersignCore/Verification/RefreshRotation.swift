public import Foundation

/// What a refresh-token rotation decides inside its transaction; every
/// store applies the same rule, then writes what it says.
public enum RefreshRotation: Sendable {
    /// Store `next`, marking the presented token rotated.
    case rotated(next: RefreshTokenRecord)
    /// The token was rotated or revoked before: its family must go.
    case reused(family: String)
    /// No such token, or it expired: nothing changes.
    case unknown

    /// The rule, given the presented token as read in the transaction.
    public static func decide(current: RefreshTokenRecord?, replacement: RefreshTokenRecord, now: Date)
        -> RefreshRotation
    {
        guard let current, current.expiresAt > now else { return .unknown }
        guard current.rotatedAt == nil, current.revokedAt == nil else { return .reused(family: current.familyID) }
        var next = replacement
        next.familyID = current.familyID
        next.authTime = current.authTime
        next.acr = current.acr
        return .rotated(next: next)
    }
}
