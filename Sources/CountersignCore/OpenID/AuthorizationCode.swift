/// An authorization code the broker issued, by the flow that redeems it:
/// each flow makes its own shape, and the token endpoint tells them apart
/// by parsing it here, once.
public enum AuthorizationCode: Sendable, Equatable {
    /// A sign-in by approval's: `<event id>.<secret>` (``OpenIDSignIn/code(eventID:secret:)``).
    case signIn(eventID: String)
    /// The hosted verification page's: `<challenge number>.<secret>`.
    case verification(challengeID: Int64)

    /// What redeems `code`, or nil for no code the broker makes.
    public init?(_ code: String) {
        if let parsed = OpenIDSignIn.parse(code: code) {
            self = .signIn(eventID: parsed.eventID)
            return
        }
        let parts = code.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let challengeID = Int64(parts[0]), !parts[1].isEmpty else { return nil }
        self = .verification(challengeID: challengeID)
    }

    /// A verification's code: its challenge's number, so that the token
    /// endpoint, which gets only the code, finds it; then the secret.
    public static func verificationCode(challengeID: Int64, secret: String) -> String { "\(challengeID).\(secret)" }
}
