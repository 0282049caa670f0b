import CountersignCore
import CountersignStore
import Foundation

/// Every change of an event, written once. Each transition is the store's
/// conditional write (which also writes the outbox: webhooks, the CIBA
/// ping, the decision record); a write that lost a race is answered from
/// the event as that write found it, never read again; and whoever shows
/// the event hears of it: its own waiters (its requester, its backend) and
/// every inbox of its user's devices on this instance, with the metrics
/// counted. Other instances hear it from the store (PostgreSQL sends the
/// same keys with `NOTIFY` in the change's transaction).
///
/// Flows decide *whether* to change an event (the rules in Core); this
/// type is how. None of them writes an event or wakes anyone itself.
struct EventTransitions {
    let environment: BrokerEnvironment

    /// A new event was stored: a pending one appears in the user's inboxes
    /// (nobody can wait on the event itself yet).
    func created(_ event: ApprovalEvent) {
        if event.storedStatus == .pending {
            wakeInboxes(of: event)
        } else {
            environment.metrics.decided(event)
        }
        environment.metrics.created(event)
    }

    /// A device's approval or rejection; with `decision.enrolls`, the
    /// pairing's new device too.
    func settle(_ event: ApprovalEvent, with decision: RecordedDecision, now: Date) async throws -> ApprovalEvent {
        let settled = try await refusingConflicts(now: now) {
            try await environment.store.settleEvent(id: event.id, decision: decision, now: now)
        }
        changed([settled])
        return settled
    }

    /// "This wasn't me": the event rejected, with the user's other pending
    /// ones, and requesters held off (``FraudProtection``).
    func reportFraud(_ event: ApprovalEvent, with decision: RecordedDecision, now: Date) async throws
        -> ApprovalEvent
    {
        let report = try await refusingConflicts(now: now) {
            try await environment.store.reportFraud(
                id: event.id, decision: decision,
                protectUntil: environment.policy.fraudProtection.until(reportedAt: now), now: now)
        }
        changed([report.event] + report.alsoRejected)
        return report.event
    }

    /// One wrong match number counted; the last one allowed rejects the
    /// event. Returns the event after it.
    func countWrongMatch(_ event: ApprovalEvent, spending spent: SpentProofID, now: Date) async throws
        -> ApprovalEvent
    {
        let maxWrong = environment.policy.maxWrongMatches
        let after = try await environment.store.updateEvent(id: event.id, spending: spent, now: now) { current in
            try Self.open(current, at: now).countingWrongMatch(maxWrong: maxWrong, at: now)
        }
        changed([after])
        return after
    }

    /// A device's answer to an event that needs a quorum, judged by
    /// ``DecisionRules`` in the transaction that writes it, against the
    /// approvals that came before it (on any instance): an approval
    /// counted, the quorum reached, a rejection, a wrong number. A refusal
    /// changes nothing but spends the decision's id. Returns the event
    /// after it and the outcome.
    func answerQuorum(
        _ event: ApprovalEvent, with decision: RecordedDecision, claims: DecisionClaims, now: Date
    ) async throws -> (ApprovalEvent, DecisionOutcome) {
        let maxWrong = environment.policy.maxWrongMatches
        let passkey = decision.assertion.flatMap { assertion in
            decision.signCount.map { PasskeyUse(credentialID: assertion.credentialID, signCount: $0) }
        }
        let (after, outcome) = try await environment.store.updateEvent(
            id: event.id, decidedBy: decision.deviceID, spending: decision.spends, passkey: passkey, now: now
        ) { [decision] current, device in
            guard let device else { return (current, DecisionOutcome.refused(.revokedDevice)) }
            let outcome = DecisionRules.evaluate(
                claims, by: device, on: current, userVerified: decision.assertion != nil, now: now)
            switch outcome {
            case .countApproval:
                let approval = QuorumApproval(
                    clientUserID: device.clientUserID, deviceID: device.id, decision: decision.jws,
                    assertion: decision.assertion, approvedAt: now)
                return (current.approved(with: approval, now: now), outcome)
            case .settle(.rejected):
                return (
                    current.rejected(
                        by: device.id, decision: decision.jws ?? "", assertion: decision.assertion, now: now), outcome
                )
            case .wrongMatch:
                return (current.countingWrongMatch(maxWrong: maxWrong, at: now), outcome)
            case .refused:
                return (current, outcome)
            case .settle, .reportFraud:
                // Not an outcome for an event with a quorum.
                return (current, .refused(.alreadyDecided))
            }
        }
        if after != event { changed([after]) }
        return (after, outcome)
    }

    /// Its requester or backend gave up on it.
    func withdraw(_ event: ApprovalEvent, now: Date) async throws -> ApprovalEvent {
        let withdrawn = try await environment.store.updateEvent(id: event.id, spending: nil, now: now) { current in
            try Self.open(current, at: now).withdrawn(at: now)
        }
        changed([withdrawn])
        environment.metrics.withdrew()
        return withdrawn
    }

    /// `event`, read in the change's transaction, if it still takes a
    /// change; else why not, as ``closed(_:at:)`` says it.
    static func open(_ event: ApprovalEvent, at now: Date) throws -> ApprovalEvent {
        guard event.closure(at: now) == nil else { throw closed(event, at: now) }
        return event
    }

    /// A right TOTP code of `device`, accepted once; with `event`, that
    /// event approved by it. `codeUsed` when the step was spent already
    /// (by this code or a later one), meanwhile too.
    func acceptCode(step: Int64, of device: TrustedDevice, for event: ApprovalEvent?, now: Date) async throws
        -> ApprovalEvent?
    {
        let settled: ApprovalEvent?
        do {
            settled = try await environment.store.acceptTOTPCode(
                deviceID: device.id, step: step, eventID: event?.id, now: now)
        } catch let error as StoreError where error.code == .conflict {
            // The event's own conflict names it; the device's (step used) does not.
            if let current = error.event, current.isSettled(at: now) { throw Self.closed(current, at: now) }
            throw APIError.codeUsed(now: now)
        }
        if let settled { changed([settled]) }
        return settled
    }

    /// Why an event takes no more answers: what a decision, a code or a
    /// withdrawal on it is told. Still pending, only the deciding device
    /// can be what the write refused: it was removed meanwhile.
    static func closed(_ event: ApprovalEvent, at now: Date) -> APIError {
        .refused(event.closure(at: now) ?? .revokedDevice)
    }

    /// `write`, with a conflict on the event answered by why it is closed.
    private func refusingConflicts<T>(now: Date, _ write: () async throws -> T) async throws -> T {
        do {
            return try await write()
        } catch let error as StoreError where error.code == .conflict {
            guard let current = error.event else { throw error }
            throw Self.closed(current, at: now)
        }
    }

    /// Events a write changed (decided, withdrawn, rejected by a report,
    /// a wrong number counted, an approval of a quorum). Its waiters
    /// re-read it; the inboxes when it left them, or when they show its
    /// approvals so far (a wrong number leaves the pending set as it is).
    private func changed(_ events: [ApprovalEvent]) {
        let now = environment.now()
        for event in events {
            environment.hub.notify(WakeKey.event(event.id))
            if event.status(at: now) != .pending || event.quorum != nil { wakeInboxes(of: event) }
            if event.storedStatus != .pending { environment.metrics.decided(event) }
        }
    }

    /// The inboxes that show it: its user's, or its approvers'.
    private func wakeInboxes(of event: ApprovalEvent) {
        for user in event.answeringUsers {
            environment.hub.notify(WakeKey.inbox(issuer: event.issuer, user: user))
        }
    }
}
