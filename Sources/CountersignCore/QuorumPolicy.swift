public import Foundation

/// An app's rule that every event of one type needs several approvers (M
/// of N), whoever asks for it: a requester's `LOGIN` (an SSH or VPN login
/// to a server that holds what matters), a backend's `TRANSACTION`, a CIBA
/// client's request. The approvers are `users`, or a `group` (the app's
/// approver group of that name, else a directory group) read when each
/// event is made.
public struct QuorumPolicy: Sendable, Equatable {
    public var issuer: String
    /// The event name it applies to (`LOGIN`, `TRANSACTION`, …).
    public var event: String
    public var users: [String]?
    public var group: String?
    public var requiredApprovals: Int
    public var allowRequester: Bool
    public var updatedAt: Date
    /// Who set it last: `rest` (the backend) or `cli`.
    public var updatedVia: String

    public init(
        issuer: String, event: String, users: [String]?, group: String?, requiredApprovals: Int,
        allowRequester: Bool, updatedAt: Date, updatedVia: String
    ) {
        self.issuer = issuer
        self.event = event
        self.users = users
        self.group = group
        self.requiredApprovals = requiredApprovals
        self.allowRequester = allowRequester
        self.updatedAt = updatedAt
        self.updatedVia = updatedVia
    }

    /// Why such a policy cannot be kept, or nil: a valid event name other
    /// than a pairing's (which the user's own device approves), `users` or
    /// `group` (one of them), and 1 to ``ApproverQuorum/maxApprovers``
    /// approvals required, no more than the users listed.
    public static func refusal(event: String, users: [String]?, group: String?, requiredApprovals: Int) -> String? {
        guard EventName.isValid(event) else { return "event must be 1 to 64 of A-Z, 0-9 and _" }
        guard event != EventName.enrollNewTrustedDevice else {
            return "a pairing is approved by the user's own device, not by approvers"
        }
        guard (1...ApproverQuorum.maxApprovers).contains(requiredApprovals) else {
            return "required_approvals is 1 to \(ApproverQuorum.maxApprovers)"
        }
        switch (users, group) {
        case (let users?, nil):
            if let refusal = ApproverQuorum(users: users, requiredApprovals: requiredApprovals, allowRequester: true)
                .refusal(requester: "")
            {
                return refusal
            }
            return nil
        case (nil, let group?):
            return group.isEmpty || group.utf8.count > 1024 ? "group is 1 to 1024 bytes" : nil
        default:
            return "approvers takes users or a group, one of them"
        }
    }
}
