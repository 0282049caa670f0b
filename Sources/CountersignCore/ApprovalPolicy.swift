public import Foundation

/// The limits the broker enforces; all times are by the broker's clock.
public struct ApprovalPolicy: Sendable {
    /// How long a pending event waits for a decision.
    public var window: TimeInterval
    /// Pending events one user may have at once (prompt-bombing guard):
    /// of the backend's own, and of requesters' from one address.
    public var maxPendingPerUser: Int
    /// Requesters' pending events one user may have at once, from all
    /// addresses.
    public var maxRequesterPendingPerUser = 10
    /// Requesters' pending events from one address, for all users.
    public var maxPendingPerAddress = 10
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
    /// Requesters' events per user in an hour, pending or not.
    public var maxRequestsPerUser = 30
    /// Requesters' events from one address in an hour, for all users.
    public var maxRequestsPerAddress = 120
    /// What a "this wasn't me" answer does to the user's requests.
    public var fraudProtection = FraudProtection()

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

    /// The limits on pending events, as ``PendingCap`` applies them.
    public var pendingLimits: PendingLimits {
        PendingLimits(
            perUser: maxPendingPerUser, perUserFromRequesters: maxRequesterPendingPerUser,
            perAddress: maxPendingPerAddress, requestsPerUser: maxRequestsPerUser,
            requestsPerAddress: maxRequestsPerAddress)
    }
}
