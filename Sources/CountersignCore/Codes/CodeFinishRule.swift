/// Which events a TOTP or recovery code may settle. A code proves that
/// someone read a trusted device's screen within the last minute, nothing
/// about the request and nothing about who read it: it finishes a LOGIN,
/// never a transaction or a pairing, and never an event that requires its
/// owner verified by a passkey (proto/signing.md §10).
public enum CodeFinishRule {
    public enum Refusal: Sendable, Equatable {
        /// Not a LOGIN: it needs a trusted device's decision.
        case notALogin
        /// Only a passkey assertion, its owner verified, approves it.
        case userVerificationRequired
    }

    /// Why a code may not finish `event`, or nil if it may.
    public static func refusal(for event: ApprovalEvent) -> Refusal? {
        if event.name != EventName.login { return .notALogin }
        if event.userVerification { return .userVerificationRequired }
        return nil
    }

    /// Why a backend may not record a code as an approved LOGIN of its
    /// app, whose policy is `policy`, or nil if it may.
    public static func refusal(recordingUnder policy: UserVerificationPolicy) -> Refusal? {
        policy == .required ? .userVerificationRequired : nil
    }
}
