import CountersignCore
import CountersignStore
import Foundation
import Hummingbird

/// Invitations from the console: enrollment links sent by email to many
/// people at once (picked by hand or by a directory group), listed with
/// who has not enrolled yet, sent again or withdrawn. Each change is
/// decided by ``InvitationRules`` inside the store's transaction, audited
/// there, and its mail leaves through the outbox.
struct ConsoleInvitations {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<ConsoleRequestContext> {
        RouteCollection(context: ConsoleRequestContext.self)
            .get("invitations", use: list)
            .post("invitations", use: invite)
            .post("invitations/:invitation/resend", use: resend)
            .post("invitations/:invitation/withdraw", use: withdraw)
            .get("directory/groups", use: groups)
    }

    struct InvitationDocument: Encodable, Sendable {
        let id: String
        let apiKeyID: String
        let app: String?
        let user: String
        let email: String
        let state: InvitationRecord.State
        let mailError: String?
        let invitedBy: String
        let createdAt: Date
        let expiresAt: Date
        let withdrawnAt: Date?
        let enrolledAt: Date?
        enum CodingKeys: String, CodingKey {
            case id, app, user, email, state
            case apiKeyID = "api_key_id"
            case mailError = "mail_error"
            case invitedBy = "invited_by"
            case createdAt = "created_at"
            case expiresAt = "expires_at"
            case withdrawnAt = "withdrawn_at"
            case enrolledAt = "enrolled_at"
        }

        init(_ record: InvitationRecord, app: String?, now: Date) {
            let invitation = record.invitation
            id = invitation.id
            apiKeyID = invitation.issuer
            self.app = app
            user = invitation.clientUserID
            email = invitation.email
            state = record.state(at: now)
            mailError = [.sending, .failed].contains(state) ? record.mailError : nil
            invitedBy = invitation.invitedBy
            createdAt = invitation.createdAt
            expiresAt = invitation.expiresAt
            withdrawnAt = invitation.withdrawnAt
            enrolledAt = record.enrolledAt
        }
    }

    struct Page: Encodable, Sendable {
        let invitations: [InvitationDocument]
        let next: String?
    }

    /// Newest first: `?api_key_id=` one app's, `?prefix=` user ids that
    /// start so, `?state=open` only those nobody enrolled with yet,
    /// `?before=` the page after that invitation.
    @Sendable func list(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<Page> {
        let now = environment.now()
        let openOnly: Bool
        switch request.uri.queryParameters["state"].map(String.init) {
        case nil, "all": openOnly = false
        case "open": openOnly = true
        case let other?: throw APIError.badRequest("state must be open or all, not \"\(other)\"")
        }
        let limit = try request.limit()
        let records = try await environment.store.invitations(
            InvitationQuery(
                issuer: request.filter("api_key_id"), userPrefix: request.filter("prefix") ?? "", openOnly: openOnly,
                now: now, before: request.filter("before"), limit: limit))
        let names = try await appNames()
        return JSONBody(
            Page(
                invitations: records.map { InvitationDocument($0, app: names[$0.invitation.issuer], now: now) },
                next: records.count == limit ? records.last?.invitation.id : nil))
    }

    struct Person: Decodable {
        let user: String?
        let email: String?
    }

    struct InviteRequest: Decodable {
        let apiKeyID: String?
        let users: [Person]?
        let group: String?
        let expiresIn: Double?
        enum CodingKeys: String, CodingKey {
            case users, group
            case apiKeyID = "api_key_id"
            case expiresIn = "expires_in"
        }
    }

    struct Refused: Encodable, Sendable {
        let user: String
        let error: InvitationRefusal
        let message: String
    }

    struct Outcome: Encodable, Sendable {
        let invited: [InvitationDocument]
        let refused: [Refused]
    }

    /// Invites each person named, and each member of `group`, to enroll a
    /// device as the app's user: one invitation each, or the reason they
    /// were passed over. Nothing is sent twice to someone with an open
    /// invitation or a device.
    @Sendable func invite(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<Outcome> {
        let body = try await request.decodeJSON(InviteRequest.self, context: context)
        let key = try await app(body.apiKeyID)
        let lifetime = body.expiresIn ?? Invitation.defaultLifetime
        guard lifetime.isFinite, lifetime >= 3600, lifetime <= Invitation.longestLifetime else {
            throw APIError.badRequest("expires_in must be between 3600 and \(Int(Invitation.longestLifetime)) seconds")
        }
        try requireMailSender()
        // A typo anywhere sends nothing: the operator mends the list.
        var people: [(user: String, email: String?)] = []
        for (index, person) in (body.users ?? []).enumerated() {
            guard let user = person.user, ClientUserID.isValid(user) else {
                throw APIError.badRequest("users[\(index)]: the user id is missing or invalid")
            }
            let email = person.email.flatMap { $0.isEmpty ? nil : $0 }
            if let email, IdentifierType.email.normalize(email) == nil {
                throw APIError.badRequest("users[\(index)]: \(email) is not an email address")
            }
            guard !people.contains(where: { $0.user == user }) else {
                throw APIError.badRequest("users[\(index)]: \(user) is named twice")
            }
            people.append((user, email))
        }
        if let group = body.group {
            let directory = try await environment.store.directoryPeople()
            let named = DirectoryGroup.named(group, in: directory)
            guard let chosen = named.first else {
                throw APIError.notFound("the directory lists nobody in group \(group)")
            }
            guard named.count == 1 else {
                throw APIError.badRequest(
                    "\(group) names \(named.count) groups (\(named.map(\.dn).joined(separator: "; "))): give its DN")
            }
            people += directory.filter { $0.isMember(of: chosen.dn) }.map { ($0.clientUserID, nil) }
        }
        var seen = Set<String>()
        people = people.filter { seen.insert($0.user).inserted }
        guard people.count <= Invitation.batchLimit else {
            throw APIError.badRequest("at most \(Invitation.batchLimit) people at once, not \(people.count)")
        }
        var invited: [InvitationDocument] = []
        var refused: [Refused] = []
        for person in people {
            var ask = rulesRequest(key: key, user: person.user, email: person.email, context: context)
            ask.lifetime = lifetime
            do {
                let change = try await environment.store.updateInvitations(
                    issuer: key.id, clientUserID: person.user
                ) { [ask] state in try InvitationRules.invite(state, ask) }
                if let added = change.added {
                    invited.append(
                        InvitationDocument(
                            InvitationRecord(invitation: added, mail: .queued), app: key.name, now: ask.now))
                }
            } catch let refusal as InvitationRefusal {
                refused.append(Refused(user: person.user, error: refusal, message: refusal.explanation))
            }
        }
        if !invited.isEmpty { environment.hub.notify(WakeKey.outbox) }
        return JSONBody(Outcome(invited: invited, refused: refused))
    }

    struct ResendRequest: Decodable {
        let email: String?
    }

    /// Sends an invitation again with a new link (to a new address if one
    /// is given): the earlier link stops working.
    @Sendable func resend(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        InvitationDocument
    > {
        let earlier = try await invitation(context)
        guard earlier.invitation.withdrawnAt == nil else {
            throw APIError.conflict(.invitationClosed, "this invitation was withdrawn: invite them anew")
        }
        let body =
            request.hasBody
            ? try await request.decodeJSON(ResendRequest.self, context: context) : ResendRequest(email: nil)
        let key = try await app(earlier.invitation.issuer)
        try requireMailSender()
        var ask = rulesRequest(
            key: key, user: earlier.invitation.clientUserID, email: body.email.flatMap { $0.isEmpty ? nil : $0 },
            context: context)
        ask.lifetime = max(3600, earlier.invitation.expiresAt.timeIntervalSince(earlier.invitation.createdAt))
        let change = try await apply(earlier) { [ask] state in
            try InvitationRules.resend(state, id: earlier.invitation.id, ask)
        }
        environment.hub.notify(WakeKey.outbox)
        guard let added = change.added else { throw APIError.conflict(.conflict, "nothing was sent") }
        return JSONBody(
            InvitationDocument(InvitationRecord(invitation: added, mail: .queued), app: key.name, now: ask.now),
            status: .created)
    }

    /// Withdraws an invitation: its link stops working at once, and its
    /// mail is not sent if it is still waiting.
    @Sendable func withdraw(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        InvitationDocument
    > {
        let record = try await invitation(context)
        guard record.invitation.withdrawnAt == nil else {
            throw APIError.conflict(.invitationClosed, "this invitation was withdrawn already")
        }
        let now = environment.now()
        _ = try await apply(record) { [name = context.signedIn.name, ip = context.clientAddress] state in
            try InvitationRules.withdraw(state, id: record.invitation.id, operatorName: name, ip: ip, now: now)
        }
        guard let after = try await environment.store.invitation(id: record.invitation.id) else {
            throw APIError.notFound("no such invitation")
        }
        return JSONBody(
            InvitationDocument(after, app: try await appNames()[after.invitation.issuer], now: environment.now()))
    }

    struct GroupDocument: Encodable, Sendable {
        let dn: String
        let name: String
        let members: Int
    }

    struct Groups: Encodable, Sendable { let groups: [GroupDocument] }

    /// The directory's groups with how many people each holds: what an
    /// invitation can name.
    @Sendable func groups(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<Groups> {
        let groups = DirectoryGroup.all(in: try await environment.store.directoryPeople())
        return JSONBody(Groups(groups: groups.map { GroupDocument(dn: $0.dn, name: $0.name, members: $0.members) }))
    }

    // MARK: Helpers

    /// Invitations need a sender of whole mails (not a webhook for codes).
    private func requireMailSender() throws {
        guard environment.mailSender != nil else {
            throw APIError.conflict(
                .noMailSender, "this broker sends no email: start it with --sender smtp to send invitations")
        }
    }

    /// The unrevoked app named, not the console's own (its operators are
    /// enrolled from the host).
    private func app(_ id: String?) async throws -> APIKey {
        guard let id, !id.isEmpty else { throw APIError.badRequest("api_key_id is missing") }
        guard let key = try await environment.store.apiKey(id: id), key.revokedAt == nil else {
            throw APIError.notFound("no unrevoked API key \(id)")
        }
        try ConsoleActions.refuseAtConsole(key.id)
        return key
    }

    private func invitation(_ context: ConsoleRequestContext) async throws -> InvitationRecord {
        let id = try context.parameters.require("invitation")
        guard let record = try await environment.store.invitation(id: id) else {
            throw APIError.notFound("no such invitation")
        }
        return record
    }

    private func appNames() async throws -> [String: String] {
        Dictionary(
            try await environment.store.apiKeys().map { ($0.id, $0.name) },
            uniquingKeysWith: { first, _ in first })
    }

    private func rulesRequest(key: APIKey, user: String, email: String?, context: ConsoleRequestContext)
        -> InvitationRules.Request
    {
        InvitationRules.Request(
            issuer: key.id, appName: key.name.isEmpty ? key.id : key.name, clientUserID: user, email: email,
            operatorName: context.signedIn.name, ip: context.clientAddress, lifetime: Invitation.defaultLifetime,
            broker: environment.issuer, now: environment.now())
    }

    /// Runs one decision on an invitation's user, its refusal as the
    /// matching error.
    private func apply(
        _ record: InvitationRecord, _ change: @escaping @Sendable (InvitationUserState) throws -> InvitationChange
    ) async throws -> InvitationChange {
        do {
            return try await environment.store.updateInvitations(
                issuer: record.invitation.issuer, clientUserID: record.invitation.clientUserID, change)
        } catch let refusal as InvitationRefusal {
            switch refusal {
            case .unknownInvitation: throw APIError.notFound(refusal.explanation)
            case .notOpen: throw APIError.conflict(.invitationClosed, refusal.explanation)
            case .alreadyEnrolled: throw APIError.conflict(.hasTrustedDevice, refusal.explanation)
            case .userSuspended: throw APIError.conflict(.userSuspended, refusal.explanation)
            case .alreadyInvited: throw APIError.conflict(.conflict, refusal.explanation)
            case .noEmail, .invalidEmail, .invalidUser: throw APIError.badRequest(refusal.explanation)
            }
        }
    }
}
