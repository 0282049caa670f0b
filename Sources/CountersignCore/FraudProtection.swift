public import Foundation

/// What a fraud report ("this wasn't me") does beyond rejecting its event:
/// every other pending event of the user is rejected at once, and for
/// ``duration`` requesters (who need only the API key id) cannot open new
/// ones for the user; the app backend, with its secret, still can. Someone
/// bombing a user with prompts is stopped by the first report.
public struct FraudProtection: Sendable, Equatable {
    /// How long the user is protected after a report.
    public var duration: TimeInterval

    public static let defaultDuration: TimeInterval = 15 * 60

    public init(duration: TimeInterval = FraudProtection.defaultDuration) {
        self.duration = duration
    }

    /// Until when a report at `now` protects the user.
    public func until(reportedAt now: Date) -> Date { now + duration }

    /// The protection a report asking for `requested` leaves: never
    /// shorter than one still `running` from an earlier report.
    public static func until(_ requested: Date, running: Date?) -> Date {
        max(requested, running ?? requested)
    }

    /// What a report of `reported` (rejected by it) leaves at `now`, given
    /// the user's other `pending` events and the protection `running` from
    /// an earlier report, as the store's transaction reads them: each of
    /// those events that still takes an answer rejected
    /// (``ApprovalEvent/rejectedByFraudReport(at:)``), and the user
    /// protected until `requested` or the running protection's end, the later.
    public static func report(
        _ reported: ApprovalEvent, pending: [ApprovalEvent], requested: Date, running: Date?, now: Date
    ) -> FraudReport {
        FraudReport(
            event: reported,
            alsoRejected: pending.filter { $0.id != reported.id }.compactMap { $0.rejectedByFraudReport(at: now) },
            protectedUntil: until(requested, running: running))
    }
}

extension ApprovalEvent {
    /// This event of the reporting user as a fraud report at `now` leaves
    /// it: rejected with reason `user_protected` and no deciding device if
    /// it still takes an answer; nil (left as it is) otherwise.
    public func rejectedByFraudReport(at now: Date) -> ApprovalEvent? {
        guard closure(at: now) == nil else { return nil }
        var after = self
        after.storedStatus = .rejected
        after.storedReason = .userProtected
        after.decidedAt = now
        after.updatedAt = now
        return after
    }
}

/// A fraud report as a store records it, with what it changed.
public struct FraudReport: Sendable, Equatable {
    /// The reported event, now rejected.
    public var event: ApprovalEvent
    /// The user's other pending events it rejected.
    public var alsoRejected: [ApprovalEvent]
    /// Until when requesters cannot open events for the user.
    public var protectedUntil: Date

    public init(event: ApprovalEvent, alsoRejected: [ApprovalEvent], protectedUntil: Date) {
        self.event = event
        self.alsoRejected = alsoRejected
        self.protectedUntil = protectedUntil
    }
}
