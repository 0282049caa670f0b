public import Foundation

/// The limits the broker enforces; all times are by the broker's clock.
public struct ApprovalPolicy: Sendable {
    /// How long a pending event waits for a decision.
    public var window: TimeInterval
    /// The limits on pending events and requesters' rates, as
    /// ``PendingCap`` applies them (the prompt-bombing guards). Their
    /// defaults are ``PendingLimits``'s own.
    public var pendingLimits = PendingLimits()
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
    /// What a "this wasn't me" answer does to the user's requests.
    public var fraudProtection = FraudProtection()

    public init(
        window: TimeInterval = 60, maxWrongMatches: Int = 3, proofLeeway: TimeInterval = 60,
        enrollmentTokenLifetime: TimeInterval = 600, eventTokenLifetime: TimeInterval = 300, maxWait: TimeInterval = 30
    ) {
        self.window = window
        self.maxWrongMatches = maxWrongMatches
        self.proofLeeway = proofLeeway
        self.enrollmentTokenLifetime = enrollmentTokenLifetime
        self.eventTokenLifetime = eventTokenLifetime
        self.maxWait = maxWait
    }

    /// Wrong numbers left after `event`'s, before the last one allowed
    /// rejects it (``ApprovalEvent/countingWrongMatch(maxWrong:at:)``).
    public func wrongMatchesLeft(after event: ApprovalEvent) -> Int {
        max(0, maxWrongMatches - event.wrongMatches)
    }
}
