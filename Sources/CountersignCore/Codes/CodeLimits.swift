public import Foundation

/// How many TOTP codes may be tried, per event and per user: the rule both
/// stores apply inside the transaction that counts an attempt.
public struct CodeLimits: Sendable {
    /// Attempts one pending event takes.
    public var perEvent: Int
    /// Consecutive failures of a user after which each failure locks out.
    public var lockoutAfter: Int
    /// The first lock-out; each further failure doubles it.
    public var firstLockout: TimeInterval
    /// The longest lock-out.
    public var maxLockout: TimeInterval

    public init(
        perEvent: Int = 5, lockoutAfter: Int = 10, firstLockout: TimeInterval = 60, maxLockout: TimeInterval = 3600
    ) {
        self.perEvent = perEvent
        self.lockoutAfter = lockoutAfter
        self.firstLockout = firstLockout
        self.maxLockout = maxLockout
    }

    /// How long a user's count of failed codes is kept after their last
    /// attempt, once no lock-out runs: garbage collection forgets it then,
    /// so the count cannot grow, nor its rows pile up, for ever. Waiting a
    /// day between tries gains an attacker nothing against a million codes.
    public static let failuresKept: TimeInterval = 86400

    /// How long after its approval window ran out unanswered a request
    /// still takes a code. A person who types a code at a prompt left open
    /// (a PAM login after "no answer came in time") gets in, and the event
    /// must say so: approved, by `TOTP`, not expired.
    public static let lateCodeWindow: TimeInterval = 600

    /// Whether a code may settle `event` at `now`: while it is pending, and
    /// for ``lateCodeWindow`` after its window ran out with no answer;
    /// never once it was decided or withdrawn.
    public static func takesCode(_ event: ApprovalEvent, now: Date) -> Bool {
        guard event.storedStatus == .pending, event.withdrawnAt == nil, event.storedReason == nil else {
            return false
        }
        return now < event.expiresAt + lateCodeWindow
    }

    /// The stores' form of ``takesCode(_:now:)``: an undecided event that
    /// was not withdrawn takes a code at `now` if it expires after this.
    public static func codesTaken(expiringAfter now: Date) -> Date { now - lateCodeWindow }

    /// Whole seconds left of a lock-out that ends at `lockedUntil` (as
    /// stored); nil when none runs at `now`.
    public func lockedFor(until lockedUntil: Date?, now: Date) -> Int? {
        guard let lockedUntil, lockedUntil > now else { return nil }
        return max(1, Int(lockedUntil.timeIntervalSince(now).rounded(.up)))
    }

    /// What one more code attempt on `event` (as read in the transaction)
    /// does, for the user `issuer`/`clientUserID` at `now`.
    public func attempt(on event: ApprovalEvent?, issuer: String, clientUserID: String, now: Date) -> CodeAttemptOutcome
    {
        guard let event, event.issuer == issuer, event.clientUserID == clientUserID else {
            return .refused(.unknownEvent)
        }
        guard Self.takesCode(event, now: now) else { return .refused(.notPending) }
        guard event.codeAttempts < perEvent else {
            return .refused(.exhausted(retryAfter: max(1, Int(event.expiresAt.timeIntervalSince(now).rounded(.up)))))
        }
        return .counted(attemptsLeft: perEvent - event.codeAttempts - 1)
    }

    /// How long the user is locked out after `failures` consecutive ones.
    public func lockout(afterFailures failures: Int) -> TimeInterval? {
        guard failures >= lockoutAfter else { return nil }
        let doublings = min(failures - lockoutAfter, 30)
        return min(firstLockout * Double(1 << doublings), maxLockout)
    }
}

/// What one more code attempt on an event does.
public enum CodeAttemptOutcome: Sendable, Equatable {
    /// Count it; the event takes `attemptsLeft` more after it.
    case counted(attemptsLeft: Int)
    /// Count nothing.
    case refused(Refusal)

    public enum Refusal: Error, Sendable, Equatable {
        /// No such event of this user.
        case unknownEvent
        /// It was decided or withdrawn, or expired over ``CodeLimits/lateCodeWindow`` ago.
        case notPending
        /// It had all its attempts; it takes none until it expires.
        case exhausted(retryAfter: Int)
        /// The user is locked out for `retryAfter` seconds more.
        case lockedOut(retryAfter: Int)
    }
}
