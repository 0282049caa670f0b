public import CountersignCore
import Foundation

/// An error every store implementation reports the same way, so that the
/// broker maps it to HTTP without knowing which database is behind it.
///
/// Equality is on the code alone.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: Sendable, Hashable {
        /// The thing named does not exist (or is not visible to the caller).
        case notFound
        /// A thing with that identity exists already (an id, a key).
        case alreadyExists
        /// A proof or decision id (`jti`) the device has used before.
        case replayed
        /// A conditional write found the row no longer in the state it needs
        /// (an event already decided or expired, a device revoked).
        case conflict
        /// A per-user limit is reached; retry after the given seconds.
        case limitReached(retryAfter: Int)
        /// The user reported fraud a short while ago; requesters retry
        /// after the given seconds.
        case userProtected(retryAfter: Int)
        /// The database itself failed; the message says how.
        case backend
    }

    /// The kind of failure.
    public let code: Code
    /// A sentence for logs; never shown to clients for `backend`.
    public let message: String
    /// For a refused write on an event (`conflict`, or `limitReached` by
    /// the event's own limit): the event as the write found it, in the same
    /// transaction, so the caller tells why without reading it again.
    public let event: ApprovalEvent?

    public init(_ code: Code, _ message: String, event: ApprovalEvent? = nil) {
        self.code = code
        self.message = message
        self.event = event
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { "\(code): \(message)" }
}
