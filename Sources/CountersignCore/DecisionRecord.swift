public import Foundation

/// A decision as the audit log keeps it: the event as it stood when it was
/// approved or rejected (who decided, when, the device's signed JWS, and
/// everything the approver was shown), written in the decision's own
/// transaction. Events are deleted after the retention period; these are
/// not, so a user's history of approvals outlives them.
public struct DecisionRecord: Sendable, Equatable {
    public var eventID: String
    public var issuer: String
    public var clientUserID: String
    public var decidedAt: Date
    /// The event as the REST API shows it (an ``EventDocument`` without the
    /// token), as JSON.
    public var document: Data

    public init(eventID: String, issuer: String, clientUserID: String, decidedAt: Date, document: Data) {
        self.eventID = eventID
        self.issuer = issuer
        self.clientUserID = clientUserID
        self.decidedAt = decidedAt
        self.document = document
    }

    /// The record of `event` once approved or rejected; nil while it is
    /// not (pending, withdrawn, expired).
    public init?(_ event: ApprovalEvent, now: Date) {
        guard [.approved, .rejected].contains(event.storedStatus), event.withdrawnAt == nil else { return nil }
        self.init(
            eventID: event.id, issuer: event.issuer, clientUserID: event.clientUserID,
            decidedAt: event.decidedAt ?? now,
            document: Data(EventDocument(event, now: now, signature: nil).wireJSON()))
    }
}
