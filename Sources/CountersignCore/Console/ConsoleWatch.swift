public import Foundation

/// A user whose fraud report keeps requesters away until ``until``.
public struct ActiveProtection: Sendable, Equatable {
    /// The app's API key id.
    public var issuer: String
    public var clientUserID: String
    public var until: Date

    public init(issuer: String, clientUserID: String, until: Date) {
        self.issuer = issuer
        self.clientUserID = clientUserID
        self.until = until
    }
}

/// How many requesters' events one user, or one address, saw since a
/// time: who is being prompted most, and from where.
public struct RequestCount: Sendable, Equatable {
    public enum Scope: String, Sendable, CaseIterable {
        /// Events for one user of one app.
        case user
        /// Events asked from one client address.
        case address
    }

    public var scope: Scope
    /// The address; for a user, the app's API key id and user id.
    public var issuer: String?
    public var key: String
    public var count: Int

    public init(scope: Scope, issuer: String?, key: String, count: Int) {
        self.scope = scope
        self.issuer = issuer
        self.key = key
        self.count = count
    }
}
