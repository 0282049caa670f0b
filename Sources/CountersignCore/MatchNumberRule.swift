public import Foundation

/// How long a request's match number is. Two digits are quick to type and
/// make a blind approval a 1-in-90 guess; once a user rejected several of
/// their requests lately (someone is trying their password, or bombing
/// them with prompts), a guess must be 1 in 900,000: 6 digits, as Okta asks
/// for on risky sign-ins, until the rejections age out of the window.
public enum MatchNumberRule {
    /// How far back rejections count.
    public static let window: TimeInterval = 10 * 60
    /// Rejections within the window from which numbers have 6 digits.
    public static let hardenAfter = 3

    /// The digits of a new request's number, given how many of the user's
    /// requests were rejected in the last ``window``.
    public static func digits(rejectedRecently: Int) -> Int {
        rejectedRecently >= hardenAfter ? 6 : 2
    }
}
