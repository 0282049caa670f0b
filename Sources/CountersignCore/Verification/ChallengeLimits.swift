public import Foundation

/// Per-identifier and per-address limits on starting verifications, and
/// the rule both stores apply inside the transaction that starts one.
public struct ChallengeLimits: Sendable {
    public var perIdentifier: Int
    public var perAddress: Int
    public var window: TimeInterval

    public init(perIdentifier: Int, perAddress: Int, window: TimeInterval) {
        self.perIdentifier = perIdentifier
        self.perAddress = perAddress
        self.window = window
    }

    /// Which limit a new challenge would pass.
    public enum Limit: String, Sendable, Equatable {
        case identifier
        case address = "ip"
    }

    /// Whether one more challenge may start at `now`, given the start times
    /// of those within the window for the same identifier and from the
    /// same address; if not, when the oldest that counts leaves the window.
    public func decide(recentByIdentifier: [Date], recentByAddress: [Date], now: Date) -> ChallengeStart {
        for (limit, recent, maximum) in [
            (Limit.identifier, recentByIdentifier, perIdentifier), (.address, recentByAddress, perAddress),
        ] where recent.count >= maximum {
            let oldest = recent.sorted()[recent.count - maximum]
            return .refuse(limit, retryAfter: max(1, Int((oldest + window).timeIntervalSince(now).rounded(.up))))
        }
        return .admit
    }
}

/// Whether a verification may start.
public enum ChallengeStart: Sendable, Equatable {
    case admit
    case refuse(ChallengeLimits.Limit, retryAfter: Int)
}
