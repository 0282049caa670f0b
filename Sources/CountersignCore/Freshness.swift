import Foundation

/// What every signed proof and decision must show besides its signature: a
/// usable id (`jti`, for the replay cache) and a time (`iat`) near the
/// broker's clock.
enum Freshness {
    /// Throws unless `jti` has 1 to 128 bytes and `iat` is within `leeway`
    /// seconds of `now`; `signed` names the thing in the message ("proof").
    static func check(jti: String, iat: Int, now: Date, leeway: TimeInterval, signed: String)
        throws(ProtocolError)
    {
        guard !jti.isEmpty, jti.utf8.count <= 128 else {
            throw ProtocolError(.malformed, "jti must have 1 to 128 characters")
        }
        guard abs(TimeInterval(iat) - now.timeIntervalSince1970) <= leeway else {
            throw ProtocolError(.stale, "the \(signed)'s iat is more than \(Int(leeway)) s from the broker's clock")
        }
    }
}
