import CountersignCore
import CountersignStore
import Foundation
import Synchronization

extension StoreConformance {
    static let invitationCases: [Case] = [
        Case(name: "invitations: written with their token, mail and audit line; enrolling by the link closes them") {
            store in
            let seen = Mutex<InvitationUserState?>(nil)
            let sent = try await store.updateInvitations(issuer: "ck_app", clientUserID: "alice") { state in
                seen.withLock { $0 = state }
                return try InvitationRules.invite(
                    state, Fixture.invitationRequest(user: "alice", email: "Alice@Example.org"))
            }
            try check(
                seen.withLock { $0 } == InvitationUserState(invitations: [], devices: [], person: nil),
                "nothing read for a new user")
            let invitation = try required(sent.added, "an invitation")
            let token = try required(sent.token, "its token")
            let mail = try required(sent.mail, "its mail")
            let record = try await store.invitation(id: invitation.id)
            try check(
                record == InvitationRecord(invitation: invitation, mail: .queued),
                "every field read back: \(String(describing: record))")
            try check(record?.state(at: Fixture.t0) == .sending, "sending")
            try check(
                try await store.invitations(InvitationQuery(now: Fixture.t0)) == [record].compactMap { $0 },
                "listed")
            try check(
                try await store.invitations(InvitationQuery(openOnly: true, now: Fixture.t0)).count == 1,
                "open")
            let queued = try await store.outboxMessage(id: invitation.messageID)
            try check(queued == mail, "its mail queued: \(String(describing: queued))")
            try check(
                try queued.map { try MailMessage(payload: $0.payload).to } == "alice@example.org",
                "to the address")
            let audit = try await store.auditRecords(before: nil, limit: 10)
            try check(
                audit.map(\.action) == [.invitationSent] && audit.first?.target == "ck_app/alice", "audited: \(audit)")

            let enrolledAt = Fixture.t0 + 60
            try await store.enrollDevice(
                Fixture.device(user: "alice", at: enrolledAt), consumingToken: token.digest, author: Fixture.author,
                now: enrolledAt)
            let enrolled = try await store.invitation(id: invitation.id)
            try check(enrolled?.enrolledAt == enrolledAt, "enrolled, when: \(String(describing: enrolled))")
            try check(enrolled?.state(at: enrolledAt) == .enrolled, "enrolled")
            try check(
                try await store.invitations(InvitationQuery(openOnly: true, now: enrolledAt)).isEmpty,
                "no longer open")
            try check(try await store.invitations(InvitationQuery(now: enrolledAt)).count == 1, "still listed")
            let again = try await Fixture.refusal {
                try await Fixture.invite(in: store, user: "alice", at: enrolledAt)
            }
            try check(again == .alreadyEnrolled, "the updater reads the user's devices: \(String(describing: again))")

            // Removed devices are read too, and still say the user enrolled.
            let device = try await store.devices(issuer: "ck_app", clientUserID: "alice")[0]
            _ = try await store.revokeDevice(
                id: device.id, issuer: "ck_app", clientUserID: "alice", author: Fixture.author, now: enrolledAt + 1)
            struct Looked: Error {}
            do {
                _ = try await store.updateInvitations(issuer: "ck_app", clientUserID: "alice") { state in
                    seen.withLock { $0 = state }
                    throw Looked()
                }
            } catch is Looked {}
            try check(
                seen.withLock { $0?.devices.map(\.id) } == [device.id]
                    && seen.withLock { $0?.invitations }
                        == [invitation],
                "the removed device and the open invitation read")
            try check(try await store.invitation(id: invitation.id)?.enrolledAt == enrolledAt, "still enrolled")
        },
        Case(name: "invitations: a second one is refused, a refused change writes nothing, the change runs once") {
            store in
            let first = try await Fixture.invite(in: store, user: "bob")
            let refusal = try await Fixture.refusal {
                try await Fixture.invite(in: store, user: "bob", at: Fixture.t0 + 60)
            }
            try check(
                refusal == .alreadyInvited, "the rule's refusal reaches the caller: \(String(describing: refusal))")
            let runs = Mutex(0)
            struct Refused: Error {}
            do {
                _ = try await store.updateInvitations(issuer: "ck_app", clientUserID: "bob") { state in
                    runs.withLock { $0 += 1 }
                    _ = try InvitationRules.resend(
                        state, id: first.added?.id ?? "",
                        Fixture.invitationRequest(user: "bob", email: nil, at: Fixture.t0 + 60))
                    throw Refused()
                }
                try check(false, "the refusal reaches the caller")
            } catch is Refused {}
            try check(runs.withLock { $0 } == 1, "the change ran once")
            let records = try await store.invitations(InvitationQuery(now: Fixture.t0 + 60))
            try check(
                records.map(\.invitation) == [first.added].compactMap { $0 } && records.first?.mail == .queued,
                "nothing written: \(records)")
            try check(try await store.outboxMessages(state: nil, limit: 10).count == 1, "one mail")
            try check(try await store.auditRecords(before: nil, limit: 10).count == 1, "one audit line")
            try await store.enrollDevice(
                Fixture.device(user: "bob", at: Fixture.t0 + 60), consumingToken: first.token?.digest ?? Data(),
                author: Fixture.author, now: Fixture.t0 + 60)
        },
        Case(name: "invitations: sent again, the earlier link stops working and its queued mail is cancelled") {
            store in
            let first = try await Fixture.invite(in: store, user: "carol")
            let earlier = try required(first.added, "an invitation")
            let t1 = Fixture.t0 + 3600
            let seen = Mutex<InvitationUserState?>(nil)
            let second = try await store.updateInvitations(issuer: "ck_app", clientUserID: "carol") { state in
                seen.withLock { $0 = state }
                return try InvitationRules.resend(
                    state, id: earlier.id, Fixture.invitationRequest(user: "carol", email: nil, at: t1))
            }
            try check(seen.withLock { $0?.invitations } == [earlier], "the open one read")
            try check(second.withdrawn == [earlier] && second.withdrawnAt == t1, "the rule replaced it")
            let later = try required(second.added, "a new invitation")
            let token = try required(second.token, "its token")
            let old = try await store.invitation(id: earlier.id)
            try check(old?.invitation.withdrawnAt == t1, "withdrawn, when: \(String(describing: old))")
            try check(old?.state(at: t1) == .withdrawn, "withdrawn")
            try check(
                old?.mail == .cancelled && old?.mailError == "the invitation was withdrawn",
                "its mail cancelled: \(String(describing: old))")
            let cancelled = try await store.outboxMessage(id: earlier.messageID)
            try check(cancelled?.finishedAt == t1, "the mail finished, when")
            try check(cancelled?.payload.isEmpty == true, "its text (the link) wiped")
            try await checkThrows(.notFound, "the earlier link") {
                try await store.enrollDevice(
                    Fixture.device(user: "carol", at: t1), consumingToken: earlier.tokenDigest,
                    author: Fixture.author, now: t1)
            }
            let new = try await store.invitation(id: later.id)
            try check(
                new?.mail == .queued && new?.state(at: t1) == .sending,
                "the new one sending: \(String(describing: new))")
            try check(new?.invitation.email == earlier.email, "to the same address")
            try check(
                try await store.invitations(InvitationQuery(openOnly: true, now: t1)).map(\.invitation.id)
                    == [later.id], "only the new one open")
            try check(
                try await store.invitations(InvitationQuery(now: t1)).map(\.invitation.id) == [later.id, earlier.id],
                "both listed, newest first")
            try check(
                try await store.auditRecords(before: nil, limit: 10).map(\.action)
                    == [.invitationResent, .invitationSent], "audited")
            try await store.enrollDevice(
                Fixture.device(user: "carol", at: t1 + 1), consumingToken: token.digest, author: Fixture.author,
                now: t1 + 1)
            try check(try await store.invitation(id: later.id)?.state(at: t1 + 1) == .enrolled, "the new link works")
        },
        Case(name: "invitations: withdrawn, the link stops working; a delivered mail stays delivered") { store in
            let sent = try await Fixture.invite(in: store, user: "dave")
            let invitation = try required(sent.added, "an invitation")
            let claimed = try await store.claimOutboxMessages(limit: 10, lease: 60, claim: "c1", now: Fixture.t0)
            try check(claimed.map(\.message.id) == [invitation.messageID], "its mail is the outbox's to send")
            try await store.finishOutboxAttempt(
                id: invitation.messageID, claim: "c1", outcome: .delivered, now: Fixture.t0 + 1)
            try check(
                try await store.invitation(id: invitation.id)?.state(at: Fixture.t0 + 1) == .sent, "sent")
            try check(
                try await store.outboxMessage(id: invitation.messageID)?.payload.isEmpty == true,
                "once the mail server took it, its text (the link) is wiped")
            let t1 = Fixture.t0 + 10
            let withdrawn = try await store.updateInvitations(issuer: "ck_app", clientUserID: "dave") {
                try InvitationRules.withdraw($0, id: invitation.id, operatorName: "ops", ip: "192.0.2.7", now: t1)
            }
            try check(withdrawn.withdrawn == [invitation] && withdrawn.added == nil, "withdrawn, nothing new")
            let record = try await store.invitation(id: invitation.id)
            try check(
                record?.invitation.withdrawnAt == t1 && record?.state(at: t1) == .withdrawn,
                "\(String(describing: record))")
            try check(record?.mail == .delivered && record?.mailError == nil, "the delivered mail left alone")
            try await checkThrows(.notFound, "the withdrawn link") {
                try await store.enrollDevice(
                    Fixture.device(user: "dave", at: t1), consumingToken: invitation.tokenDigest,
                    author: Fixture.author, now: t1)
            }
            try check(
                try await store.invitations(InvitationQuery(openOnly: true, now: t1)).isEmpty, "no longer open")
            let audit = try await store.auditRecords(before: nil, limit: 1).first
            try check(
                audit?.action == .invitationWithdrawn && audit?.actor == "ops" && audit?.target == "ck_app/dave",
                "audited: \(String(describing: audit))")
            let twice = try await Fixture.refusal {
                try await store.updateInvitations(issuer: "ck_app", clientUserID: "dave") {
                    try InvitationRules.withdraw($0, id: invitation.id, operatorName: "ops", ip: "", now: t1 + 1)
                }
            }
            try check(twice == .unknownInvitation, "a withdrawn one is not read again: \(String(describing: twice))")
        },
        Case(name: "invitations: a user the directory lists as disabled is refused") { store in
            let disabled = DirectoryPerson(
                clientUserID: "erin", dn: "uid=erin", name: "Erin", email: "erin@example.org", groups: [],
                state: .disabled, changedAt: Fixture.t0)
            _ = try await store.updateDirectoryPerson(clientUserID: "erin") {
                DirectorySync.change($0, to: disabled, now: Fixture.t0)
            }
            let seen = Mutex<DirectoryPerson?>(nil)
            let refusal = try await Fixture.refusal {
                try await store.updateInvitations(issuer: "ck_app", clientUserID: "erin") { state in
                    seen.withLock { $0 = state.person }
                    return try InvitationRules.invite(state, Fixture.invitationRequest(user: "erin", email: nil))
                }
            }
            try check(seen.withLock { $0 } == disabled, "the directory entry read")
            try check(refusal == .userSuspended, "refused: \(String(describing: refusal))")
            try check(try await store.invitations(InvitationQuery(now: Fixture.t0)).isEmpty, "nothing written")
            try check(try await store.outboxMessages(state: nil, limit: 10).isEmpty, "no mail")
        },
        Case(name: "invitations: listed newest first (ties by id in byte order), by app and user prefix, paged") {
            store in
            let alice = try await Fixture.invite(in: store, user: "alice", at: Fixture.t0)
            let alicia = try await Fixture.invite(in: store, user: "alicia", at: Fixture.t0 + 1)
            let other = try await Fixture.invite(in: store, issuer: "ck_other", user: "alice", at: Fixture.t0 + 2)
            let bob = try await Fixture.invite(in: store, user: "bob", at: Fixture.t0 + 3, lifetime: 60)
            let alina = try await Fixture.invite(in: store, user: "Alina", at: Fixture.t0 + 4, id: "inv_Zed")
            let carol = try await Fixture.invite(in: store, user: "carol", at: Fixture.t0 + 4, id: "inv_abc")
            let ids = { (changes: [InvitationChange]) in changes.compactMap(\.added?.id) }
            let now = Fixture.t0 + 1000
            func list(_ query: InvitationQuery) async throws -> [String] {
                try await store.invitations(query).map(\.invitation.id)
            }
            try check(
                try await list(InvitationQuery(now: now)) == ids([carol, alina, bob, other, alicia, alice]),
                "every app's, newest first")
            try check(
                try await list(InvitationQuery(issuer: "ck_app", now: now))
                    == ids([carol, alina, bob, alicia, alice]), "one app's")
            try check(
                try await list(InvitationQuery(userPrefix: "ali", now: now)) == ids([other, alicia, alice]),
                "by prefix, case counting")
            try check(
                try await list(InvitationQuery(issuer: "ck_app", userPrefix: "ali", now: now)) == ids([alicia, alice]),
                "both")
            try check(
                try await list(InvitationQuery(now: now, before: "inv_abc", limit: 2)) == ids([alina, bob]),
                "after a tie, a page")
            try check(
                try await list(InvitationQuery(now: now, before: bob.added?.id)) == ids([other, alicia, alice]),
                "after the cursor")
            try check(
                try await list(InvitationQuery(issuer: "ck_app", now: now, before: other.added?.id))
                    == ids([alicia, alice]), "after another app's")
            try check(try await list(InvitationQuery(now: now, before: "inv_nope")).isEmpty, "an unknown cursor")
            try check(
                try await list(InvitationQuery(openOnly: true, now: now)) == ids([carol, alina, other, alicia, alice]),
                "the expired one is not open")
            try check(try await list(InvitationQuery(now: now, limit: 1)) == ids([carol]), "a page")
            try check(try await list(InvitationQuery(userPrefix: "ali\0", now: now)).isEmpty, "a NUL in the prefix")
            try check(try await list(InvitationQuery(issuer: "ck_app\0", now: now)).isEmpty, "a NUL in the app")
            try check(try await list(InvitationQuery(now: now, before: "inv_abc\0")).isEmpty, "a NUL in the cursor")
            try check(try await store.invitation(id: "inv_abc\0") == nil, "nothing by an id with a NUL")
            try check(try await store.invitation(id: "inv_Zed")?.state(at: now) == .sending, "read by id")
            try check(try await store.invitation(id: bob.added?.id ?? "")?.state(at: now) == .expired, "expired")
        },
        Case(name: "invitations: garbage collection removes those expired long ago, keeps the rest") { store in
            let old = try await Fixture.invite(in: store, user: "frank", at: Fixture.t0, lifetime: 3600)
            let recent = try await Fixture.invite(in: store, user: "gina", at: Fixture.t0 + 6400, lifetime: 3600)
            let live = try await Fixture.invite(in: store, user: "hank", at: Fixture.t0 + 2 * 86400)
            try await store.garbageCollect(now: Fixture.t0 + 3 * 86400, eventsEndedBefore: Fixture.t0 + 7200)
            try check(try await store.invitation(id: old.added?.id ?? "") == nil, "expired before the cutoff")
            try check(try await store.invitation(id: recent.added?.id ?? "") != nil, "expired since: kept")
            try check(try await store.invitation(id: live.added?.id ?? "") != nil, "still open: kept")
        },
    ]
}

extension Fixture {
    /// An operator's request to invite `user` to `issuer` (at the
    /// directory's or the earlier invitation's address when `email` is nil).
    static func invitationRequest(
        issuer: String = "ck_app", user: String, email: String?, at now: Date = t0,
        lifetime: TimeInterval = Invitation.defaultLifetime
    ) -> InvitationRules.Request {
        InvitationRules.Request(
            issuer: issuer, appName: "Example", clientUserID: user, email: email, operatorName: "ops",
            ip: "192.0.2.7", lifetime: lifetime, broker: "https://broker.example", now: now)
    }

    /// Invites `user` through the updater, as the console does; `id` gives
    /// the invitation a chosen id (and its mail the matching target).
    @discardableResult
    static func invite(
        in store: any CountersignStore, issuer: String = "ck_app", user: String, at now: Date = t0,
        lifetime: TimeInterval = Invitation.defaultLifetime, id: String? = nil
    ) async throws -> InvitationChange {
        let request = invitationRequest(
            issuer: issuer, user: user, email: "\(user.lowercased())@example.org", at: now, lifetime: lifetime)
        return try await store.updateInvitations(issuer: issuer, clientUserID: user) { state in
            var change = try InvitationRules.invite(state, request)
            if let id {
                change.added?.id = id
                change.mail?.target = id
            }
            return change
        }
    }

    /// What `body` was refused with, by the rules.
    static func refusal(_ body: () async throws -> some Any) async throws -> InvitationRefusal? {
        do {
            _ = try await body()
        } catch let refusal as InvitationRefusal {
            return refusal
        }
        return nil
    }
}

/// `value`, or a failure saying what the rule did not make.
private func required<T>(
    _ value: T?, _ what: String, file: StaticString = #fileID, line: UInt = #line
) throws -> T {
    guard let value else { throw ConformanceFailure(message: "no \(what)", location: "\(file):\(line)") }
    return value
}
