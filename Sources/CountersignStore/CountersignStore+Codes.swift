public import CountersignCore
public import Foundation

/// The changes of a user's TOTP codes, written once above every store:
/// each is a rule of Core (``CodeLimits``) applied in the store's updater,
/// ``CountersignCodeStore/updateCodes(issuer:clientUserID:eventID:deviceID:now:_:)``.
extension CountersignStore {
    /// Counts one TOTP code attempt *before* the code is checked, so that
    /// concurrent guesses cannot outrun the limits. In one transaction:
    /// - `limitReached(retryAfter:)` while the user is locked out; nothing
    ///   is counted.
    /// - With `eventID`: `notFound` for an unknown event or one of another
    ///   user; `conflict` unless it takes a code (`CodeLimits.takesCode`:
    ///   pending, or expired unanswered within `CodeLimits.lateCodeWindow`);
    ///   `limitReached(retryAfter:)` (until it expires) once it has had
    ///   `limits.perEvent` attempts. Else the attempt is counted on it.
    ///   These refusals carry the event (``StoreError/event``); the
    ///   lock-out's does not.
    /// - The attempt counts as one more consecutive failure of the user
    ///   until ``acceptTOTPCode(deviceID:step:eventID:now:)`` clears them.
    ///   The failure that reaches `limits.lockoutAfter`, and each one after,
    ///   locks the user out for `limits.firstLockout`, doubled per further
    ///   failure, at most `limits.maxLockout`, with an `account.locked`
    ///   notice.
    public func reserveCodeAttempt(
        issuer: String, clientUserID: String, eventID: String?, limits: CodeLimits, now: Date
    ) async throws -> CodeAttempt {
        try await updateCodes(issuer: issuer, clientUserID: clientUserID, eventID: eventID, deviceID: nil, now: now) {
            state in
            switch limits.counting(
                attemptOn: state, eventAsked: eventID != nil, issuer: issuer, clientUserID: clientUserID, now: now)
            {
            case .success(let (change, left)):
                return (change, CodeAttempt(eventAttemptsLeft: left, consecutiveFailures: change.failures.consecutive))
            case .failure(let refusal):
                throw StoreError(refusal, eventID: eventID ?? "", event: state.event)
            }
        }
    }

    /// Accepts a device's matching code of time step `step`, in one
    /// transaction: `conflict` if the device is revoked, has no TOTP secret,
    /// or had a code of this or a later step accepted (nothing changes).
    /// Clears the user's consecutive failures. With `eventID`, also settles
    /// that event of the same user as approved by this device with method
    /// `TOTP` if it takes a code (`CodeLimits.takesCode`: pending, or its
    /// window ran out unanswered less than `CodeLimits.lateCodeWindow` ago;
    /// `conflict` with the event otherwise, `notFound` for no event, and
    /// nothing changes) and returns it: every login a code lets in leaves an
    /// approved event.
    @discardableResult
    public func acceptTOTPCode(deviceID: String, step: Int64, eventID: String?, now: Date) async throws
        -> ApprovalEvent?
    {
        // A device's user never changes: it names the user whose codes change.
        guard let device = try await device(id: deviceID) else { throw StoreError.stepRefused }
        return try await updateCodes(
            issuer: device.issuer, clientUserID: device.clientUserID, eventID: eventID, deviceID: deviceID, now: now
        ) { state in
            switch CodeLimits.accepting(step: step, on: state, eventAsked: eventID != nil, now: now) {
            case .success(let change): return (change, change.event)
            case .failure(.stepRefused): throw StoreError.stepRefused
            case .failure(.unknownEvent): throw StoreError(.notFound, "no event \(eventID ?? "")")
            case .failure(.eventClosed(let event)):
                throw StoreError(.conflict, "event \(event.id) takes no code", event: event)
            }
        }
    }
}

extension StoreError {
    /// A code attempt's refusal in the store contract's terms: a refusal by
    /// the event's own state or limit carries the event; the lock-out's not.
    init(_ refusal: CodeAttemptOutcome.Refusal, eventID: String, event: ApprovalEvent?) {
        switch refusal {
        case .lockedOut(let seconds): self.init(.limitReached(retryAfter: seconds), "too many wrong codes")
        case .unknownEvent: self.init(.notFound, "no event \(eventID) for this user")
        case .notPending: self.init(.conflict, "event \(eventID) is no longer pending", event: event)
        case .exhausted(let retryAfter):
            self.init(.limitReached(retryAfter: retryAfter), "the event takes no more codes", event: event)
        }
    }

    /// A right code the device takes no more (``CodeAcceptRefusal/stepRefused``).
    static var stepRefused: StoreError {
        StoreError(.conflict, "the device is revoked, has no TOTP secret, or used this step")
    }
}
