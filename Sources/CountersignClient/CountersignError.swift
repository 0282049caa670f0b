import CountersignCore

/// An error the broker answered with, or a failure to reach it.
///
/// Equality is on ``code``, so callers can match the kind of refusal.
public struct CountersignError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status, or 0 when the broker could not be reached.
    public let status: Int
    /// The broker's stable error code (e.g. `wrong_match`), or `unreachable`.
    public let code: String
    /// What went wrong, in a sentence.
    public let message: String
    /// Seconds to wait before trying again, when the broker said so.
    public let retryAfter: Int?

    public init(status: Int, code: String, message: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    /// A failure a later try may not have: no answer at all, or a proxy's
    /// 502/503/504 while the broker restarts or an instance goes away.
    public var isTransient: Bool { [0, 502, 503, 504].contains(status) }
    /// The message, with every character that a terminal would not show as
    /// itself written out (``DisplayText/escaped(_:)``): it comes from the
    /// broker, and is printed.
    public var description: String { DisplayText.escaped(message) }
}
