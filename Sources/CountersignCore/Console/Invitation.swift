public import Foundation

/// An enrollment link sent to a person by email on an operator's word: a
/// one-time enrollment token of the app's user, living days instead of
/// minutes, and the mail that carries it (kept in the outbox, retried
/// while the mail server is away).
public struct Invitation: Sendable, Equatable {
    /// `inv_` and 128 random bits.
    public var id: String
    /// The app's API key id.
    public var issuer: String
    public var clientUserID: String
    /// Where the link went.
    public var email: String
    /// SHA-256 of its enrollment token (the token itself only in the mail).
    public var tokenDigest: Data
    /// Its mail in the outbox.
    public var messageID: String
    /// The operator who sent it.
    public var invitedBy: String
    public var createdAt: Date
    public var expiresAt: Date
    /// When an operator withdrew it, or sent it again (a new one replaces
    /// it and its link stops working).
    public var withdrawnAt: Date?

    public init(
        id: String = Invitation.newID(), issuer: String, clientUserID: String, email: String, tokenDigest: Data,
        messageID: String, invitedBy: String, createdAt: Date, expiresAt: Date, withdrawnAt: Date? = nil
    ) {
        self.id = id
        self.issuer = issuer
        self.clientUserID = clientUserID
        self.email = email
        self.tokenDigest = tokenDigest
        self.messageID = messageID
        self.invitedBy = invitedBy
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.withdrawnAt = withdrawnAt
    }

    public static func newID() -> String { "inv_" + SecretToken.generate(bytes: 16) }

    /// How long a link lives unless the operator says otherwise: a week,
    /// as long as people take to read their mail after a holiday weekend.
    public static let defaultLifetime: TimeInterval = 7 * 86_400
    /// The longest an operator may give: a link is a credential.
    public static let longestLifetime: TimeInterval = 30 * 86_400
    /// The most people one request invites.
    public static let batchLimit = 1000
}

/// An invitation as the store reads it, with what became of it.
public struct InvitationRecord: Sendable, Equatable {
    public var invitation: Invitation
    /// Its mail's state; nil once the outbox let go of the finished message.
    public var mail: OutboxMessage.State?
    /// Why the mail's last attempt failed, if it did.
    public var mailError: String?
    /// When the user's first device at the app was enrolled after the
    /// invitation was made (by its link or any other way).
    public var enrolledAt: Date?

    public init(
        invitation: Invitation, mail: OutboxMessage.State?, mailError: String? = nil, enrolledAt: Date? = nil
    ) {
        self.invitation = invitation
        self.mail = mail
        self.mailError = mailError
        self.enrolledAt = enrolledAt
    }

    /// Where an invitation stands, as the console lists it.
    public enum State: String, Sendable, CaseIterable, Codable {
        /// Its mail is waiting for the mail server (or retrying).
        case sending
        /// The mail server took its mail; nobody enrolled yet.
        case sent
        /// Its mail could not be delivered.
        case failed
        /// The user enrolled a device.
        case enrolled
        /// The link ran out before anyone enrolled.
        case expired
        /// Withdrawn, or replaced by a later one.
        case withdrawn
    }

    public func state(at now: Date) -> State {
        // Whichever came first: withdrawn (or replaced) and then an
        // enrollment by another link, or enrolled and then the link ended.
        if let withdrawnAt = invitation.withdrawnAt, enrolledAt.map({ $0 >= withdrawnAt }) ?? true {
            return .withdrawn
        }
        if enrolledAt != nil { return .enrolled }
        if invitation.expiresAt <= now { return .expired }
        switch mail {
        case .queued: return .sending
        case .failed, .cancelled: return .failed
        case .delivered, nil: return .sent
        }
    }

    /// Still waiting for the person: neither enrolled, withdrawn nor
    /// expired (the console's "not enrolled yet").
    public func isOpen(at now: Date) -> Bool {
        [.sending, .sent, .failed].contains(state(at: now))
    }
}

/// What the console's invitation list asks the store for.
public struct InvitationQuery: Sendable, Equatable {
    /// Whether the query can find nothing: no stored id holds a NUL (and
    /// SQLite's binding would end the text at one).
    public var findsNothing: Bool {
        UserSummary.findsNobody(prefix: userPrefix) || [issuer, before].contains { $0?.utf8.contains(0) == true }
    }

    /// One app's, or every app's.
    public var issuer: String?
    /// User ids starting with this (byte order), or everyone.
    public var userPrefix: String
    /// Only those still waiting for the person at ``now``.
    public var openOnly: Bool
    public var now: Date
    /// Newest first: those made before this one (its id).
    public var before: String?
    public var limit: Int

    public init(
        issuer: String? = nil, userPrefix: String = "", openOnly: Bool = false, now: Date, before: String? = nil,
        limit: Int = 100
    ) {
        self.issuer = issuer
        self.userPrefix = userPrefix
        self.openOnly = openOnly
        self.now = now
        self.before = before
        self.limit = limit
    }
}

/// What the invitation updater reads of one user at one app.
public struct InvitationUserState: Sendable, Equatable {
    /// Their invitations not withdrawn, newest first.
    public var invitations: [Invitation]
    /// Their devices at the app, removed ones too.
    public var devices: [TrustedDevice]
    /// Their directory entry, if the directory lists them.
    public var person: DirectoryPerson?

    public init(invitations: [Invitation], devices: [TrustedDevice], person: DirectoryPerson?) {
        self.invitations = invitations
        self.devices = devices
        self.person = person
    }
}

/// What the invitation updater writes, in one transaction.
public struct InvitationChange: Sendable, Equatable {
    /// Invitations to mark withdrawn at ``withdrawnAt``: their enrollment
    /// tokens are deleted and their mail, if still queued, cancelled.
    public var withdrawn: [Invitation]
    public var withdrawnAt: Date?
    /// The new invitation with its token and mail.
    public var added: Invitation?
    public var token: EnrollmentToken?
    public var mail: OutboxMessage?
    public var audit: AuditRecord?

    public init(
        withdrawn: [Invitation] = [], withdrawnAt: Date? = nil, added: Invitation? = nil,
        token: EnrollmentToken? = nil, mail: OutboxMessage? = nil, audit: AuditRecord? = nil
    ) {
        self.withdrawn = withdrawn
        self.withdrawnAt = withdrawnAt
        self.added = added
        self.token = token
        self.mail = mail
        self.audit = audit
    }
}

/// Why one person was not invited (or an invitation not changed): each a
/// named value the console shows beside the user id.
public enum InvitationRefusal: String, Error, Sendable, Equatable, CaseIterable, Codable {
    /// No email address given, and none in the directory.
    case noEmail = "no_email"
    case invalidEmail = "invalid_email"
    case invalidUser = "invalid_user"
    /// The directory lists them as disabled or gone.
    case userSuspended = "user_suspended"
    /// They have a device at the app already.
    case alreadyEnrolled = "already_enrolled"
    /// An open invitation is on its way: send that one again instead.
    case alreadyInvited = "already_invited"
    /// The invitation was withdrawn or has expired.
    case notOpen = "invitation_closed"
    case unknownInvitation = "unknown_invitation"

    /// The words an operator reads.
    public var explanation: String {
        switch self {
        case .noEmail: "no email address, and the directory gives none"
        case .invalidEmail: "the email address is not valid"
        case .invalidUser: "the user id is not valid"
        case .userSuspended: "the directory lists them as disabled or gone"
        case .alreadyEnrolled: "they have a trusted device already"
        case .alreadyInvited: "an invitation is on its way already (send it again instead)"
        case .notOpen: "the invitation was withdrawn or has expired"
        case .unknownInvitation: "no such invitation"
        }
    }
}

/// The rules of invitations: who may be invited, what sending one again
/// and withdrawing one change. Pure: the updater hands them what the store
/// holds, and writes what they return.
public enum InvitationRules {
    /// What the operator asks for one person.
    public struct Request: Sendable {
        public var issuer: String
        /// The app's name, for the mail.
        public var appName: String
        public var clientUserID: String
        /// Given by the operator; else the directory's.
        public var email: String?
        public var operatorName: String
        public var ip: String
        public var lifetime: TimeInterval
        /// The broker's issuer URL, for the links.
        public var broker: String
        public var now: Date

        public init(
            issuer: String, appName: String, clientUserID: String, email: String?, operatorName: String, ip: String,
            lifetime: TimeInterval, broker: String, now: Date
        ) {
            self.issuer = issuer
            self.appName = appName
            self.clientUserID = clientUserID
            self.email = email
            self.operatorName = operatorName
            self.ip = ip
            self.lifetime = lifetime
            self.broker = broker
            self.now = now
        }
    }

    /// A new invitation for someone with no device and none on its way.
    public static func invite(_ state: InvitationUserState, _ request: Request) throws(InvitationRefusal)
        -> InvitationChange
    {
        try refuseClosed(state, request)
        // One used (the device since removed) or expired is no obstacle.
        if state.invitations.contains(where: { $0.expiresAt > request.now && !hasDevice(state, since: $0.createdAt) }) {
            throw .alreadyInvited
        }
        let email = try address(request.email ?? state.person?.email)
        // A link from before that still works (used by nobody, its person
        // enrolled otherwise since) goes: one live link per person.
        let replacing = state.invitations.filter { $0.expiresAt > request.now }
        return issue(to: email, replacing: replacing, state, request, action: .invitationSent)
    }

    /// The invitation `id` sent again with a new link (to the same address
    /// unless `request` gives another): the earlier link stops working.
    public static func resend(_ state: InvitationUserState, id: String, _ request: Request) throws(InvitationRefusal)
        -> InvitationChange
    {
        guard let earlier = state.invitations.first(where: { $0.id == id }) else {
            throw .unknownInvitation
        }
        try refuseClosed(state, request)
        let email = try address(request.email ?? earlier.email)
        // Every other live one goes too: one live link per person.
        let replacing = state.invitations.filter { $0.id == id || $0.expiresAt > request.now }
        return issue(to: email, replacing: replacing, state, request, action: .invitationResent)
    }

    /// Withdraws the invitation `id`: its link stops working at once.
    public static func withdraw(
        _ state: InvitationUserState, id: String, operatorName: String, ip: String, now: Date
    ) throws(InvitationRefusal) -> InvitationChange {
        guard let invitation = state.invitations.first(where: { $0.id == id }) else {
            throw .unknownInvitation
        }
        // After the person enrolled otherwise the link still works until it
        // expires: withdrawing it then is what ends it.
        guard invitation.expiresAt > now else { throw .notOpen }
        return InvitationChange(
            withdrawn: [invitation], withdrawnAt: now,
            audit: AuditRecord(
                at: now, actor: operatorName, action: .invitationWithdrawn,
                target: invitation.issuer + "/" + invitation.clientUserID, ip: ip))
    }

    /// The mail of an invitation: the link for a phone's browser, and the
    /// command for a machine with the agent.
    public static func mail(
        to email: String, appName: String, user: String, link: String, token: String, broker: String,
        apiKeyID: String, expiresAt: Date
    ) -> MailMessage {
        let app = appName.filter { !$0.isNewline }
        // As a POSIX shell reads it, whatever the id holds.
        let quoted = "'" + user.replacingOccurrences(of: "'", with: "'\\''") + "'"
        let until = expiresAt.formatted(
            Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!).year().month().day().time(
                includingFractionalSeconds: false))
        let text = """
            You are invited to approve \(app) sign-ins with a device you already carry.

            On your phone, open this link and follow the page:

            \(link)

            Or, on a computer with the Countersign agent, run:

            device-agent enroll --broker \(broker) --api-key \(apiKeyID) --user=\(quoted) --token \(token)

            The link works once, for you as \(user), until \(until) UTC. \
            If you did not expect this message, ignore it and tell your IT team.
            """
        return MailMessage(to: email, subject: "Set up \(app) sign-in approval", text: text)
    }

    private static func refuseClosed(_ state: InvitationUserState, _ request: Request) throws(InvitationRefusal) {
        guard ClientUserID.isValid(request.clientUserID) else { throw .invalidUser }
        if DirectoryPerson.refusesDevices(state.person) { throw .userSuspended }
        if state.devices.contains(where: { $0.revokedAt == nil }) { throw .alreadyEnrolled }
    }

    private static func hasDevice(_ state: InvitationUserState, since: Date) -> Bool {
        state.devices.contains { $0.createdAt >= since }
    }

    private static func address(_ raw: String?) throws(InvitationRefusal) -> String {
        guard let raw, !raw.isEmpty else { throw .noEmail }
        guard let email = IdentifierType.email.normalize(raw) else { throw .invalidEmail }
        return email
    }

    private static func issue(
        to email: String, replacing: [Invitation], _ state: InvitationUserState, _ request: Request,
        action: AuditRecord.Action
    ) -> InvitationChange {
        let token = "et_" + SecretToken.generate(bytes: 32)
        let expiresAt = request.now + request.lifetime
        let link = WebApproverLink.enrollment(
            broker: request.broker, apiKeyID: request.issuer, user: request.clientUserID, token: token)
        let mail = mail(
            to: email, appName: request.appName, user: request.clientUserID, link: link, token: token,
            broker: WebApproverLink.base(of: request.broker), apiKeyID: request.issuer, expiresAt: expiresAt)
        let invitation = Invitation(
            issuer: request.issuer, clientUserID: request.clientUserID, email: email,
            tokenDigest: SecretToken.digest(token), messageID: OutboxMessage.newID(),
            invitedBy: request.operatorName, createdAt: request.now, expiresAt: expiresAt)
        return InvitationChange(
            withdrawn: replacing, withdrawnAt: replacing.isEmpty ? nil : request.now, added: invitation,
            token: EnrollmentToken(
                digest: invitation.tokenDigest, issuer: request.issuer, clientUserID: request.clientUserID,
                createdAt: request.now, expiresAt: expiresAt),
            mail: OutboxMessage(
                id: invitation.messageID, kind: .mail, target: invitation.id,
                receiver: OutboxMessage.mailReceiver, eventID: nil, payload: mail.payload, createdAt: request.now,
                deliverUntil: expiresAt),
            audit: AuditRecord(
                at: request.now, actor: request.operatorName, action: action,
                target: request.issuer + "/" + request.clientUserID, ip: request.ip))
    }
}
