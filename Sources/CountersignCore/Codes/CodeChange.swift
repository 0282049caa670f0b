public import Foundation

/// A user's run of wrong TOTP codes, as stored: how many in a row, the
/// lock-out they earned, and when the last one was tried.
public struct CodeFailures: Sendable, Equatable {
    public var consecutive: Int
    public var lockedUntil: Date?
    public var lastAttemptAt: Date?

    public init(consecutive: Int, lockedUntil: Date? = nil, lastAttemptAt: Date? = nil) {
        self.consecutive = consecutive
        self.lockedUntil = lockedUntil
        self.lastAttemptAt = lastAttemptAt
    }

    /// No failure to remember: the stores keep no row for it.
    public static let none = CodeFailures(consecutive: 0)
}

/// What a change of a user's TOTP codes reads in its transaction: the
/// user's failures, and the event and the device it names, if they exist.
public struct CodeState: Sendable, Equatable {
    public var failures: CodeFailures
    public var event: ApprovalEvent?
    public var device: TrustedDevice?

    public init(failures: CodeFailures, event: ApprovalEvent?, device: TrustedDevice?) {
        self.failures = failures
        self.event = event
        self.device = device
    }
}

/// What a change of a user's TOTP codes writes, as the store's updater
/// takes it. The rules that make one are here, written once.
public struct CodeChange: Sendable {
    /// The user's failures as they are to be; ``CodeFailures/none`` forgets them.
    public var failures: CodeFailures
    /// The event as it is to be, if the change touches it.
    public var event: ApprovalEvent?
    /// The time step the device's code was accepted for: no code of it or
    /// of an earlier step is accepted again.
    public var acceptedStep: Int64?
    /// Webhook notices written with the change.
    public var notices: [WebhookNotice]

    public init(
        failures: CodeFailures, event: ApprovalEvent? = nil, acceptedStep: Int64? = nil, notices: [WebhookNotice] = []
    ) {
        self.failures = failures
        self.event = event
        self.acceptedStep = acceptedStep
        self.notices = notices
    }
}

extension CodeLimits {
    /// One more attempt of the user `issuer`/`clientUserID` counted at
    /// `now`, on `state.event` too when there is one (its refusal comes
    /// first, from ``attempt(on:issuer:clientUserID:now:)``): the attempt
    /// counts as a failure until a right code clears them, and the failure
    /// that reaches ``lockoutAfter`` (and each after it) locks the user out,
    /// with an `account.locked` notice. Refused, counting nothing, while a
    /// lock-out runs (``CodeAttemptOutcome/Refusal/lockedOut(retryAfter:)``).
    public func counting(
        attemptOn state: CodeState, eventAsked: Bool, issuer: String, clientUserID: String, now: Date
    ) -> Result<(CodeChange, attemptsLeft: Int?), CodeAttemptOutcome.Refusal> {
        if let seconds = lockedFor(until: state.failures.lockedUntil, now: now) {
            return .failure(.lockedOut(retryAfter: seconds))
        }
        var event: ApprovalEvent?
        var left: Int?
        if eventAsked {
            switch attempt(on: state.event, issuer: issuer, clientUserID: clientUserID, now: now) {
            case .refused(let refusal): return .failure(refusal)
            case .counted(let attemptsLeft):
                left = attemptsLeft
                event = state.event?.countingCodeAttempt(at: now)
            }
        }
        let counted = state.failures.consecutive + 1
        let lockout = lockout(afterFailures: counted)
        let failures = CodeFailures(consecutive: counted, lockedUntil: lockout.map { now + $0 }, lastAttemptAt: now)
        let notices = lockout.map {
            [
                WebhookNotice.accountLocked(
                    issuer: issuer, clientUserID: clientUserID, failures: counted, until: now + $0, now: now)
            ]
        }
        return .success((CodeChange(failures: failures, event: event, notices: notices ?? []), left))
    }

    /// A right code of `state.device` for time step `step`, accepted at
    /// `now`: once per step and device (an unrevoked one with a secret),
    /// clearing the user's failures; with an event asked about, that event
    /// of the same user approved by the device with method `TOTP` while it
    /// takes a code (``takesCode(_:now:)``). A refusal changes nothing.
    public static func accepting(
        step: Int64, on state: CodeState, eventAsked: Bool, now: Date
    ) -> Result<CodeChange, CodeAcceptRefusal> {
        guard let device = state.device, device.canAct, device.sealedTOTPSecret != nil,
            (device.lastTOTPStep ?? .min) < step
        else { return .failure(.stepRefused) }
        guard eventAsked else { return .success(CodeChange(failures: .none, acceptedStep: step)) }
        guard let event = state.event else { return .failure(.unknownEvent) }
        guard event.issuer == device.issuer, event.clientUserID == device.clientUserID, takesCode(event, now: now)
        else { return .failure(.eventClosed(event)) }
        return .success(
            CodeChange(failures: .none, event: event.approved(byCodeOf: device.id, at: now), acceptedStep: step))
    }
}

/// Why a right code was not accepted.
public enum CodeAcceptRefusal: Error, Sendable, Equatable {
    /// The device is revoked, has no secret, or had a code of this step or
    /// a later one accepted.
    case stepRefused
    /// No such event.
    case unknownEvent
    /// The event is another user's, or takes no code any more.
    case eventClosed(ApprovalEvent)
}

extension ApprovalEvent {
    /// The event after one more code tried on it at `now`.
    public func countingCodeAttempt(at now: Date) -> ApprovalEvent {
        var after = self
        after.codeAttempts += 1
        after.updatedAt = now
        return after
    }

    /// The event approved at `now` by a right code of device `deviceID`:
    /// method `TOTP`, no signed decision. Only for an event that takes a
    /// code (``CodeLimits/takesCode(_:now:)``).
    public func approved(byCodeOf deviceID: String, at now: Date) -> ApprovalEvent {
        var after = self
        after.storedStatus = .approved
        after.method = .totp
        after.decidedBy = deviceID
        after.decidedAt = now
        after.updatedAt = now
        return after
    }
}
