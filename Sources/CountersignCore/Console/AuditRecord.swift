public import Foundation

/// One line of the audit log: what an operator did, and every operator
/// sign-in, with who, what, when and from where. Kept in the store, never
/// garbage-collected, and exported as JSON lines for a SIEM.
public struct AuditRecord: Sendable, Equatable {
    /// What was done.
    public enum Action: String, Sendable, CaseIterable {
        case operatorAdded = "operator.added"
        case operatorRemoved = "operator.removed"
        case signedIn = "operator.signed_in"
        case signedOut = "operator.signed_out"
        /// A console sign-in that an approval did not finish: not an operator.
        case signInRefused = "operator.sign_in_refused"
        case deviceRemoved = "device.removed"
        case fraudProtectionEnded = "fraud_protection.ended"
        case webhookResent = "webhook.resent"
        case endpointDisabled = "webhook_endpoint.disabled"
        case endpointEnabled = "webhook_endpoint.enabled"
        case apiKeyCreated = "apikey.created"
        case apiKeyRotated = "apikey.rotated"
        case apiKeyRevoked = "apikey.revoked"
        case enrollmentIssued = "enrollment.issued"
        case radiusClientAdded = "radius_client.added"
        case radiusClientChanged = "radius_client.changed"
        case radiusClientRemoved = "radius_client.removed"
        /// The directory sync suspended a person's devices: disabled there,
        /// or no longer listed.
        case userSuspended = "directory.user_suspended"
        /// The directory lists a suspended person as enabled again.
        case userReinstated = "directory.user_reinstated"
        /// An enrollment link sent by email (``Invitation``).
        case invitationSent = "invitation.sent"
        /// Sent again with a new link; the earlier link stopped working.
        case invitationResent = "invitation.resent"
        /// Withdrawn: its link stopped working.
        case invitationWithdrawn = "invitation.withdrawn"
        /// An app's group of approvers set or its users replaced (``ApproverGroup``).
        case approverGroupSet = "approver_group.set"
        case approverGroupDeleted = "approver_group.deleted"
    }

    /// Its place in the log, given by the store; nil before it is stored.
    public var id: Int64?
    public var at: Date
    /// Who: an operator's name, or `host` for a command run on the host.
    public var actor: String
    public var action: Action
    /// What it was done to (an operator, a device, an API key), if anything.
    public var target: String?
    /// Where from: the client address, nil for the host.
    public var ip: String?

    public init(id: Int64? = nil, at: Date, actor: String, action: Action, target: String? = nil, ip: String? = nil) {
        self.id = id
        self.at = at
        self.actor = actor
        self.action = action
        self.target = target
        self.ip = ip
    }

    /// The actor of what is done by a command on the host.
    public static let host = "host"
    /// The actor of what the directory sync does.
    public static let directory = "directory"
}

/// What the console searches the audit log by: each filter given narrows
/// it, none gives every line.
public struct AuditQuery: Sendable, Equatable {
    /// Who, exactly: an operator's name, or `host`.
    public var actor: String?
    public var action: AuditRecord.Action?
    /// What it was done to, exactly (an app/user pair is `APP/USER`).
    public var target: String?
    /// At or after.
    public var from: Date?
    /// Before.
    public var to: Date?

    public init(
        actor: String? = nil, action: AuditRecord.Action? = nil, target: String? = nil, from: Date? = nil,
        to: Date? = nil
    ) {
        self.actor = actor
        self.action = action
        self.target = target
        self.from = from
        self.to = to
    }

    /// Whether the search finds nothing without asking: a filter holds a
    /// NUL: no line holds one, and neither store can ask for one (SQLite's
    /// binding ends text at it, PostgreSQL refuses it).
    public var findsNothing: Bool { [actor, target].contains { $0?.utf8.contains(0) == true } }
}

extension AuditRecord: WireJSONWritable {
    public func write(to object: inout WireJSON.Object) {
        object.field("action", action.rawValue)
        object.field("actor", actor)
        object.field("at", at)
        object.field("id", id.map(Int.init))
        // Every field on every line, as the docs list them: null for the
        // host's address and for an action with no target.
        object.field("ip", orNull: ip)
        object.field("target", orNull: target)
    }
}
