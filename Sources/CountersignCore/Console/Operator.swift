public import Foundation

/// Someone who may sign in to the operator's console: named on the host
/// (`device-broker operator add NAME`), and signed in by approving on a
/// trusted device of the console's own app, whose user id is that name.
public struct Operator: Sendable, Equatable {
    /// The name, which is the operator's user id at the console app.
    public var name: String
    public var addedAt: Date

    public init(name: String, addedAt: Date) {
        self.name = name
        self.addedAt = addedAt
    }

    /// Names follow the rules of user ids (``ClientUserID``).
    public static func isValid(name: String) -> Bool { ClientUserID.isValid(name) }
}
