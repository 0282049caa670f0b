public import Foundation

/// The limits the broker enforces; all times are by the broker's clock.
public struct ApprovalPolicy: Sendable {
    /// How long a pending event waits for a decision.
    public var window: TimeInterval
    /// Pending events one user may have at once (prompt-bombing guard).
    public var maxPendingPerUser: Int
    /// Wrong match numbers after which the event is rejected.
    public var maxWrongMatches: Int
    /// How far a proof's or decision's `iat` may be from the broker's clock.
    public var proofLeeway: TimeInterval
    /// Lifetime of an enrollment token.
    public var enrollmentTokenLifetime: TimeInterval
    /// Lifetime of an event token.
    public var eventTokenLifetime: TimeInterval
    /// The longest a long-poll is held.
    public var maxWait: TimeInterval

    public init(
        window: TimeInterval = 60, maxPendingPerUser: Int = 3, maxWrongMatches: Int = 3, proofLeeway: TimeInterval = 60,
        enrollmentTokenLifetime: TimeInterval = 600, eventTokenLifetime: TimeInterval = 300, maxWait: TimeInterval = 30
    ) {
        self.window = window
        self.maxPendingPerUser = maxPendingPerUser
        self.maxWrongMatches = maxWrongMatches
        self.proofLeeway = proofLeeway
        self.enrollmentTokenLifetime = enrollmentTokenLifetime
        self.eventTokenLifetime = eventTokenLifetime
        self.maxWait = maxWait
    }
}
