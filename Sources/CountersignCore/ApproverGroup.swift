public import Foundation

/// A named set of people an app asks to approve its events (M of N),
/// kept by the broker for the app (its API key): "payments-approvers",
/// "prod-deployers". An event's `approvers.group` names one of these, or
/// else a directory group.
public struct ApproverGroup: Sendable, Equatable {
    /// The API key id of the app whose group it is.
    public var issuer: String
    public var name: String
    /// The users in it, in the order given.
    public var users: [String]
    public var updatedAt: Date
    /// Who set it last: `rest` (the backend) or `cli`.
    public var updatedVia: String

    public init(issuer: String, name: String, users: [String], updatedAt: Date, updatedVia: String) {
        self.issuer = issuer
        self.name = name
        self.users = users
        self.updatedAt = updatedAt
        self.updatedVia = updatedVia
    }

    /// Why a group named `name` cannot hold `users`, or nil: a name of 1 to
    /// 64 of `A-Z a-z 0-9 . _ -`, 1 to ``ApproverQuorum/maxApprovers``
    /// valid user ids, none twice.
    public static func refusal(name: String, users: [String]) -> String? {
        guard isValidName(name) else { return "a group's name is 1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-'" }
        guard !users.isEmpty else { return "a group needs at least one user" }
        guard users.count <= ApproverQuorum.maxApprovers else {
            return "a group holds at most \(ApproverQuorum.maxApprovers) users"
        }
        if let invalid = users.first(where: { !ClientUserID.isValid($0) }) {
            return "users names an invalid user id: \(invalid.debugDescription)"
        }
        guard !ClientUserID.hasDuplicates(users) else { return "users names a user twice" }
        return nil
    }

    /// Whether `name` can name a group.
    public static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.utf8.allSatisfy {
                ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z"))
                    || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z"))
                    || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                    || [
                        UInt8(ascii: "."), UInt8(ascii: "_"),
                        UInt8(ascii: "-"),
                    ].contains($0)
            }
    }
}
