import CountersignCore
import CountersignStore
import Foundation

/// Who must approve an event, as a request asks (`approvers`) or as the
/// app's policy for its event name says (``QuorumPolicy``): the users
/// listed, or the members of the group named (the app's approver group of
/// that exact name, else a directory group's active members), read when
/// the event is made and held to ``ApproverQuorum/refusal(requester:)``.
struct QuorumResolution {
    let environment: BrokerEnvironment

    /// The quorum of `users` or `group` for an event of `requester` at app
    /// `issuer`; a 400 saying why one cannot be kept.
    func quorum(
        users listed: [String]?, group: String?, requiredApprovals: Int, allowRequester: Bool, requester: String,
        issuer: String
    ) async throws -> ApproverQuorum {
        let users: [String]
        switch (listed, group) {
        case (let listed?, nil):
            users = listed
        case (nil, let group?):
            users = try await members(of: group, issuer: issuer)
        default:
            throw APIError.badRequest("approvers takes users or a group, one of them")
        }
        let quorum = ApproverQuorum(
            users: users, group: group, requiredApprovals: requiredApprovals, allowRequester: allowRequester)
        if let refusal = quorum.refusal(requester: requester) { throw APIError.badRequest(refusal) }
        return quorum
    }

    /// The quorum the app's policy asks of an event named `name` for
    /// `requester`, or nil without one. A policy that cannot be met now
    /// (its group emptied, the requester its only approver) refuses the
    /// event: 409 `too_few_approvers`, never an event without its quorum.
    func policy(for name: String, requester: String, key: APIKey) async throws -> ApproverQuorum? {
        guard let policy = try await Self.policy(for: name, key: key, in: environment.store) else { return nil }
        do {
            return try await quorum(
                users: policy.users, group: policy.group, requiredApprovals: policy.requiredApprovals,
                allowRequester: policy.allowRequester, requester: requester, issuer: key.id)
        } catch let error as APIError {
            throw APIError.conflict(
                .tooFewApprovers, "this app's policy for \(name) cannot be met now: \(error.message)")
        }
    }

    /// The app's policy for events named `name`, read only when the key's
    /// authenticating read found one (``APIKey/mayHaveQuorumPolicy(for:)``).
    static func policy(for name: String, key: APIKey, in store: any CountersignStore) async throws -> QuorumPolicy? {
        guard key.mayHaveQuorumPolicy(for: name) else { return nil }
        return try await store.quorumPolicy(issuer: key.id, event: name)
    }

    /// The users of the app's approver group `group`, else the active
    /// members of the directory group it names (by name or DN).
    private func members(of group: String, issuer: String) async throws -> [String] {
        if let own = try await environment.store.approverGroup(issuer: issuer, name: group) { return own.users }
        let people = try await environment.store.directoryPeople()
        let groups = DirectoryGroup.named(group, in: people)
        guard groups.count == 1, let dn = groups.first?.dn else {
            throw APIError.badRequest(
                groups.isEmpty
                    ? "no approver group of this app, nor directory group, is named \(group.debugDescription)"
                    : "groups in several branches are named \(group.debugDescription); name one by its DN")
        }
        return people.filter { $0.state == .active && $0.isMember(of: dn) }.map(\.clientUserID)
    }
}
