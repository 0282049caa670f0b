public import Foundation

/// What a verified decision does to an event.
public enum DecisionOutcome: Sendable, Equatable {
    /// Record the verdict; the event is settled.
    case settle(EventStatus)
    /// Reject the event as fraud, and protect its user (``FraudProtection``).
    case reportFraud
    /// The number typed was wrong; count it, and reject the event if it was
    /// the last try.
    case wrongMatch
    /// One more approval of an event that needs a quorum
    /// (``ApprovalEvent/approved(with:now:)``): it stays pending until
    /// enough distinct approvers gave theirs.
    case countApproval
    /// Nothing changes; the reason says why.
    case refused(Refusal)

    /// Why a decision changes nothing.
    public enum Refusal: String, Sendable, Equatable {
        case revokedDevice = "device_revoked"
        case suspendedDevice = "device_suspended"
        case otherUser = "wrong_user"
        case alreadyDecided = "already_decided"
        case expired = "expired"
        case matchRequired = "match_required"
        case withdrawn = "withdrawn"
        case userVerificationRequired = "user_verification_required"
        /// The device's user is not among the event's approvers (or is
        /// the user who asks, whom separation of duties leaves out).
        case notApprover = "not_an_approver"
        /// The device's user approved the event already, with this device
        /// or another of theirs: a quorum counts people, not devices.
        case alreadyApproved = "already_approved"
    }
}

/// The rules that turn a verified decision into an outcome. Pure: the
/// store applies the outcome with one conditional write.
public enum DecisionRules {
    /// Evaluates `claims` by `device` on `event` at `now`; `userVerified`
    /// says whether a passkey assertion for this decision was verified.
    ///
    /// An event that needs a quorum is answered by its approvers' devices
    /// instead of its own user's: an approval counts once per approver
    /// (``DecisionOutcome/countApproval``), and any approver's rejection
    /// rejects it. "This wasn't me" from an approver, who was not the one
    /// asking, is a rejection that protects nobody.
    public static func evaluate(
        _ claims: DecisionClaims, by device: TrustedDevice, on event: ApprovalEvent, userVerified: Bool = false,
        now: Date
    ) -> DecisionOutcome {
        guard device.revokedAt == nil else { return .refused(.revokedDevice) }
        guard device.suspendedAt == nil else { return .refused(.suspendedDevice) }
        if let quorum = event.quorum {
            guard device.issuer == event.issuer, quorum.mayApprove(device.clientUserID, requester: event.clientUserID)
            else { return .refused(.notApprover) }
        } else {
            guard device.belongs(toIssuer: event.issuer, user: event.clientUserID) else { return .refused(.otherUser) }
        }
        if let closed = event.closure(at: now) { return .refused(closed) }
        let approval: DecisionOutcome = event.quorum == nil ? .settle(.approved) : .countApproval
        switch claims.decision {
        case .reject:
            return .settle(.rejected)
        case .fraud:
            return event.quorum == nil ? .reportFraud : .settle(.rejected)
        case .approve:
            guard !event.userVerification || userVerified else { return .refused(.userVerificationRequired) }
            if event.quorum != nil, event.isApproved(by: device.clientUserID) { return .refused(.alreadyApproved) }
            guard let expected = event.matchNumber else { return approval }
            guard let given = claims.match else { return .refused(.matchRequired) }
            return given == expected ? approval : .wrongMatch
        }
    }
}

/// What a requester's withdrawal of its own event does.
public enum Withdrawal: Sendable, Equatable {
    /// Close the pending event now.
    case withdraw
    /// Withdrawn before: nothing changes, and the answer is the same.
    case alreadyWithdrawn
    /// Nothing changes: the event was decided, or its window closed.
    case refused(DecisionOutcome.Refusal)

    /// Whether the event can be withdrawn at `now`.
    public static func evaluate(_ event: ApprovalEvent, now: Date) -> Withdrawal {
        if event.withdrawnAt != nil { return .alreadyWithdrawn }
        return event.closure(at: now).map(Withdrawal.refused) ?? .withdraw
    }
}

extension ApprovalEvent {
    /// Why the event takes no answer at `now` (a decision, a code, a
    /// withdrawal), or nil while it is pending.
    public func closure(at now: Date) -> DecisionOutcome.Refusal? {
        if withdrawnAt != nil { return .withdrawn }
        switch status(at: now) {
        case .pending: return nil
        case .expired: return .expired
        case .approved, .rejected: return .alreadyDecided
        }
    }

    /// The event withdrawn at `now` by its requester or backend: its window
    /// closes then (it reads as expired, `withdrawn`). Only for an event
    /// that takes an answer (``closure(at:)`` is nil).
    public func withdrawn(at now: Date) -> ApprovalEvent {
        var after = self
        after.expiresAt = now
        after.withdrawnAt = now
        after.updatedAt = now
        return after
    }

    /// The event after one more wrong match number at `now`: the
    /// `maxWrong`-th rejects it, with no deciding device. Only for an event
    /// that takes an answer (``closure(at:)`` is nil).
    public func countingWrongMatch(maxWrong: Int, at now: Date) -> ApprovalEvent {
        var after = self
        after.wrongMatches += 1
        after.updatedAt = now
        if after.wrongMatches >= maxWrong {
            after.storedStatus = .rejected
            after.decidedAt = now
        }
        return after
    }
}
