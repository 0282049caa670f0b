public import Foundation

/// An operator's session at the console: started by a Countersign login
/// that a trusted device of the operator approved, held by the browser as
/// an `HttpOnly` cookie whose secret the store keeps only as a digest.
public struct ConsoleSession: Sendable, Equatable {
    /// SHA-256 of the cookie's secret.
    public var digest: Data
    public var operatorName: String
    /// The approved login that started it; one session per event.
    public var eventID: String
    /// The address it was started from; a request from another is refused.
    public var ip: String
    public var createdAt: Date
    public var expiresAt: Date
    /// Set at sign-out; an ended session takes nothing.
    public var endedAt: Date?

    public init(
        digest: Data, operatorName: String, eventID: String, ip: String, createdAt: Date, expiresAt: Date,
        endedAt: Date? = nil
    ) {
        self.digest = digest
        self.operatorName = operatorName
        self.eventID = eventID
        self.ip = ip
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.endedAt = endedAt
    }
}

/// Whether a request's console cookie stands for a session: the one rule,
/// whichever store the session came from.
public enum ConsoleSessionRule {
    /// How long a session lasts from sign-in, whatever is done in it: an
    /// operator approves again after that.
    public static let lifetime: TimeInterval = 60 * 60

    public enum Verdict: Sendable, Equatable {
        case valid
        /// No session has this cookie.
        case unknown
        case expired
        case signedOut
        /// The cookie came from another address than the sign-in's: copied.
        case otherAddress

        /// What the refused request is told; one sentence for all, so that
        /// a copied cookie learns nothing of the session it was copied from.
        public var refusal: String? {
            self == .valid ? nil : "not signed in, or the session ended: sign in again"
        }
    }

    public static func check(_ session: ConsoleSession?, address: String, now: Date) -> Verdict {
        guard let session else { return .unknown }
        if session.endedAt != nil { return .signedOut }
        if now >= session.expiresAt { return .expired }
        if session.ip != address { return .otherAddress }
        return .valid
    }

    /// Whether an approved login signs its user in: a LOGIN of the console
    /// app, approved by a trusted device (its key, and its passkey where
    /// the console's policy asks for one; not a TOTP code, which is a
    /// fallback for apps, typed where the login was asked), and still
    /// fresh enough that a sign-in attempt left open cannot be finished
    /// much later.
    public enum SignIn: Sendable, Equatable {
        case signIn
        case notConsoleLogin
        case notApproved
        case notByDevice
        case tooLate
    }

    /// How long after its decision an approval can still start a session.
    public static let signInWindow: TimeInterval = 5 * 60

    public static func signIn(_ event: ApprovalEvent, consoleAppID: String, now: Date) -> SignIn {
        // Asked for by a requester with a number to type (the console's
        // sign-in), not a device's own request, approved by itself or
        // pending for its passkey with no number.
        guard event.issuer == consoleAppID, event.name == EventName.login, event.requesterTokenDigest != nil,
            event.matchNumber != nil
        else { return .notConsoleLogin }
        guard event.status(at: now) == .approved, let decided = event.decidedAt else { return .notApproved }
        guard event.method == .trustedDevice else { return .notByDevice }
        return now.timeIntervalSince(decided) > signInWindow ? .tooLate : .signIn
    }
}

/// The console's own app: an API key the broker makes the first time an
/// operator is added, whose users are the operators. Its devices enroll
/// (with a token from the host), pair and approve as any app's do; what
/// would let someone other than the host make or unmake an operator's
/// device, or a login pass for a console sign-in, is refused.
public enum ConsoleApp {
    /// The key's id, fixed so that every broker on a store finds it; app
    /// keys made otherwise start `ck_` and are random.
    public static let apiKeyID = "ck_console"
    public static let name = "Countersign console"

    /// What is asked of the console's app.
    public enum Use: Sendable, Equatable {
        /// A call authenticated with the app's secret (backend, OAuth, CIBA).
        case secret
        /// A requester's event (other than a pairing) from the events API.
        case requesterEvent(name: String)
        /// Enrolling a device by recovery code or verified identifier.
        case enrollWithoutToken
        /// Making recovery codes.
        case recoveryCodes
        /// From the console: removing a device, ending a protection,
        /// making an enrollment link, rotating or revoking the key.
        case consoleAction
    }

    /// Why `use` of app `apiKeyID` is refused, or nil when it is not the
    /// console's app or the use is allowed.
    public static func refusal(of use: Use, apiKeyID: String) -> String? {
        guard apiKeyID == Self.apiKeyID else { return nil }
        switch use {
        case .secret:
            return "the console's app takes no secret: operators are named and enrolled on the host"
        case .requesterEvent(let name) where name == EventName.enrollNewTrustedDevice:
            return nil
        case .requesterEvent:
            return "sign in to the console at /console/"
        case .enrollWithoutToken, .recoveryCodes:
            return "an operator's devices are enrolled on the host: device-broker operator enroll"
        case .consoleAction:
            return "the console's own app and its operators' devices are changed on the host only"
        }
    }
}
