/// An error in something a client sent: a key, a proof, a decision.
///
/// Equality is on the code alone, so tests can match the kind of failure
/// without depending on the wording of the message.
public struct ProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        case malformed = "malformed"
        case invalidKey = "invalid_key"
        case wrongType = "wrong_type"
        case wrongAlgorithm = "wrong_algorithm"
        case badSignature = "bad_signature"
        case wrongMethod = "wrong_method"
        case wrongURL = "wrong_url"
        case wrongAudience = "wrong_audience"
        case wrongEvent = "wrong_event"
        case wrongNonce = "wrong_nonce"
        case wrongDisplay = "wrong_display"
        case wrongVerdict = "wrong_verdict"
        case stale = "stale"
        case wrongDevice = "wrong_device"
        case wrongKey = "wrong_key"
        case wrongChallenge = "wrong_challenge"
        case wrongOrigin = "wrong_origin"
        case userNotVerified = "user_not_verified"
        case signCount = "sign_count"
        case tooFewApprovals = "too_few_approvals"
    }

    /// The kind of failure.
    public let code: Code
    /// A sentence for a person reading logs or an error response.
    public let message: String

    /// Creates an error with a code and a human-readable message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { "\(code.rawValue): \(message)" }
}
