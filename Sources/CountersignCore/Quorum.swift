public import Foundation

/// Who must approve an event that needs several people (M of N: dual
/// control, the four-eyes principle), as its app backend asked when it
/// created it. The event stays pending until ``requiredApprovals``
/// distinct users among ``users`` approved it, each with a device of their
/// own; any one of them rejecting it rejects it.
public struct ApproverQuorum: Codable, Sendable, Equatable {
    /// The users who may approve, in the order given: the request's
    /// `users`, or the members of `group` when the event was created.
    public var users: [String]
    /// The group they were read from, when the request named one.
    public var group: String?
    /// How many distinct users must approve.
    public var requiredApprovals: Int
    /// Whether the user the event names (who asks) counts as an approver
    /// when listed; separation of duties says not, by default.
    public var allowRequester: Bool

    enum CodingKeys: String, CodingKey {
        case users, group
        case requiredApprovals = "required_approvals"
        case allowRequester = "allow_requester"
    }

    public init(users: [String], group: String? = nil, requiredApprovals: Int, allowRequester: Bool = false) {
        self.users = users
        self.group = group
        self.requiredApprovals = requiredApprovals
        self.allowRequester = allowRequester
    }

    /// At most this many approvers per event.
    public static let maxApprovers = 50

    /// The users whose approval counts on an event of `requester`. User
    /// ids compare byte for byte here, as everywhere (``ClientUserID/same(_:_:)``).
    public func approvers(requester: String) -> [String] {
        allowRequester ? users : users.filter { !ClientUserID.same($0, requester) }
    }

    /// Whether `user` may approve an event of `requester`.
    public func mayApprove(_ user: String, requester: String) -> Bool {
        users.contains { ClientUserID.same($0, user) } && (allowRequester || !ClientUserID.same(user, requester))
    }

    /// Why a quorum asked for an event of `requester` cannot be kept, or
    /// nil: each user a valid id, none twice, at most ``maxApprovers``,
    /// and at least ``requiredApprovals`` (1 or more) of them who may
    /// approve.
    public func refusal(requester: String) -> String? {
        guard !users.isEmpty else { return "approvers needs users, or a group with members" }
        guard users.count <= Self.maxApprovers else { return "approvers takes at most \(Self.maxApprovers) users" }
        if let invalid = users.first(where: { !ClientUserID.isValid($0) }) {
            return "approvers names an invalid user id: \(invalid.debugDescription)"
        }
        guard !ClientUserID.hasDuplicates(users) else { return "approvers names a user twice" }
        guard requiredApprovals >= 1 else { return "required_approvals is 1 or more" }
        let eligible = approvers(requester: requester).count
        guard requiredApprovals <= eligible else {
            let excluded = !allowRequester && users.contains(requester) ? " (the requesting user does not count)" : ""
            return "required_approvals is \(requiredApprovals) but only \(eligible) approver(s) may approve\(excluded)"
        }
        return nil
    }
}

/// One approver's approval of an event that needs a quorum, as the event
/// keeps it: who, with which device, its signed decision (and passkey
/// assertion) verbatim, and when.
public struct QuorumApproval: Codable, Sendable, Equatable {
    public var clientUserID: String
    public var deviceID: String
    /// The device's decision JWS, verbatim (proto/signing.md §2); left out
    /// where other approvers read the event, since it carries the number
    /// the requester shows (``EventDocument/forApprovers()``).
    public var decision: String?
    /// The passkey assertion sent with it, when the event required one.
    public var assertion: PasskeyAssertion?
    public var approvedAt: Date

    enum CodingKeys: String, CodingKey {
        case decision, assertion
        case clientUserID = "client_user_id"
        case deviceID = "device_id"
        case approvedAt = "approved_at"
    }

    public init(
        clientUserID: String, deviceID: String, decision: String?, assertion: PasskeyAssertion? = nil,
        approvedAt: Date
    ) {
        self.clientUserID = clientUserID
        self.deviceID = deviceID
        self.decision = decision
        self.assertion = assertion
        self.approvedAt = approvedAt
    }
}

extension QuorumApproval: WireJSONWritable {
    public func write(to object: inout WireJSON.Object) {
        object.field("approved_at", approvedAt)
        object.field("assertion", assertion)
        object.field("client_user_id", clientUserID)
        object.field("decision", decision)
        object.field("device_id", deviceID)
    }
}

extension EventDocument {
    /// The document as an approver's device reads it (its inbox, one
    /// event, its decision's answer): each approval's who and when, without
    /// its signed decision or assertion, which carry the number the
    /// requester shows. Another approver could type it from there instead
    /// of from the requester's screen. The app's backend gets them whole.
    public func forApprovers() -> EventDocument {
        guard approvals?.isEmpty == false else { return self }
        var shown = self
        shown.approvals = approvals?.map {
            QuorumApproval(
                clientUserID: $0.clientUserID, deviceID: $0.deviceID, decision: nil, approvedAt: $0.approvedAt)
        }
        return shown
    }
}

extension ApproverQuorum: WireJSONWritable {
    public func write(to object: inout WireJSON.Object) {
        object.field("allow_requester", allowRequester)
        object.field("group", group)
        object.field("required_approvals", requiredApprovals)
        object.field("users", users)
    }
}

extension ApprovalEvent {
    /// The users whose devices answer it: its own user's, or, when it
    /// needs a quorum, its approvers'. Their inboxes show it.
    public var answeringUsers: [String] {
        quorum?.approvers(requester: clientUserID) ?? [clientUserID]
    }

    /// Whether `device` is one that answers it: of its user, or of one of
    /// its approvers.
    public func isAnswered(by device: TrustedDevice) -> Bool {
        device.issuer == issuer && answeringUsers.contains { ClientUserID.same($0, device.clientUserID) }
    }

    /// Whether `user` approved it already (for a quorum).
    public func isApproved(by user: String) -> Bool {
        approvals.contains { ClientUserID.same($0.clientUserID, user) }
    }

    /// The event after `approval`, at `now`: one more approval of its
    /// quorum, and approved once that makes ``ApproverQuorum/requiredApprovals``,
    /// the last approver's device named as deciding it. Only for a pending
    /// event with a quorum whose rule allowed it (``DecisionRules``).
    public func approved(with approval: QuorumApproval, now: Date) -> ApprovalEvent {
        var after = self
        after.approvals.append(approval)
        after.updatedAt = now
        if after.approvals.count >= quorum?.requiredApprovals ?? 1 {
            after.storedStatus = .approved
            after.decidedBy = approval.deviceID
            after.decidedAt = now
            after.decision = approval.decision
            after.assertion = approval.assertion
        }
        return after
    }

    /// The event rejected at `now` by `device`'s signed `decision`.
    public func rejected(by device: String, decision: String, assertion: PasskeyAssertion?, now: Date)
        -> ApprovalEvent
    {
        var after = self
        after.storedStatus = .rejected
        after.decidedBy = device
        after.decidedAt = now
        after.decision = decision
        after.assertion = assertion
        after.updatedAt = now
        return after
    }
}
