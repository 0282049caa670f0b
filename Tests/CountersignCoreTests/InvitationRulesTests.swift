import CountersignCore
import Crypto
import Foundation
import Testing

@Suite("invitations: who may be invited, resending, withdrawing, the mail, directory groups")
struct InvitationRulesTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func request(
        _ user: String = "alice", email: String? = nil, at now: Date = t0, lifetime: TimeInterval = 7 * 86_400
    ) -> InvitationRules.Request {
        InvitationRules.Request(
            issuer: "ck_app", appName: "Payroll", clientUserID: user, email: email, operatorName: "olivia",
            ip: "192.0.2.1", lifetime: lifetime, broker: "https://broker.example", now: now)
    }

    static func person(_ user: String = "alice", state: DirectoryPerson.State = .active, email: String? = nil)
        -> DirectoryPerson
    {
        DirectoryPerson(
            clientUserID: user, dn: "uid=\(user),ou=people,dc=example,dc=org", name: nil, email: email,
            groups: ["cn=vpn-users,ou=groups,dc=example,dc=org", "CN=Staff,OU=Groups,DC=example,DC=org"],
            state: state, changedAt: t0)
    }

    static func device(createdAt: Date = t0, revoked: Bool = false) -> TrustedDevice {
        TrustedDevice(
            publicKey: DevicePublicKey(P256.Signing.PrivateKey().publicKey), issuer: "ck_app", clientUserID: "alice",
            name: "phone", type: "web", createdAt: createdAt, revokedAt: revoked ? createdAt : nil)
    }

    static func refusal(_ body: () throws -> InvitationChange) -> InvitationRefusal? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as? InvitationRefusal
        }
    }

    @Test("an invitation: a token, its mail and its audit line; the directory's address unless one is given")
    func invite() throws {
        let state = InvitationUserState(invitations: [], devices: [], person: Self.person(email: "alice@example.org"))
        let change = try InvitationRules.invite(state, Self.request())
        let invitation = try #require(change.added)
        let token = try #require(change.token)
        let mail = try #require(change.mail)
        #expect(invitation.email == "alice@example.org" && invitation.id.hasPrefix("inv_"))
        #expect(invitation.expiresAt == Self.t0 + 7 * 86_400 && token.expiresAt == invitation.expiresAt)
        #expect(token.digest == invitation.tokenDigest && token.clientUserID == "alice" && token.issuer == "ck_app")
        #expect(mail.kind == .mail && mail.target == invitation.id && mail.id == invitation.messageID)
        #expect(mail.deliverUntil == invitation.expiresAt, "tried for as long as the link works")
        #expect(change.audit?.action == .invitationSent && change.audit?.target == "ck_app/alice")
        #expect(change.withdrawn.isEmpty)

        let text = try MailMessage(payload: mail.payload)
        #expect(text.to == "alice@example.org" && text.subject == "Set up Payroll sign-in approval")
        let sent = try #require(text.text.firstMatch(of: /--token (et_[A-Za-z0-9_-]+)/)?.1)
        #expect(SecretToken.digest(String(sent)) == token.digest, "the mail holds the token; the store its digest")
        #expect(text.text.contains("https://broker.example/approve/#enroll=\(sent)&api_key=ck_app&user=alice"))

        let given = try InvitationRules.invite(state, Self.request(email: " Alice@Example.COM "))
        #expect(given.added?.email == "alice@example.com", "given, normalized")
    }

    @Test("refused: a bad id or address, no address, suspended, a device already, an open invitation")
    func refusals() throws {
        let empty = InvitationUserState(invitations: [], devices: [], person: nil)
        #expect(
            Self.refusal { try InvitationRules.invite(empty, Self.request("a\u{0}b", email: "a@b.org")) }
                == .invalidUser)
        #expect(Self.refusal { try InvitationRules.invite(empty, Self.request(email: "not mail")) } == .invalidEmail)
        #expect(Self.refusal { try InvitationRules.invite(empty, Self.request()) } == .noEmail)
        for state in [DirectoryPerson.State.disabled, .gone] {
            let suspended = InvitationUserState(
                invitations: [], devices: [], person: Self.person(state: state, email: "a@example.org"))
            #expect(Self.refusal { try InvitationRules.invite(suspended, Self.request()) } == .userSuspended)
        }
        let enrolled = InvitationUserState(invitations: [], devices: [Self.device()], person: nil)
        #expect(
            Self.refusal { try InvitationRules.invite(enrolled, Self.request(email: "a@example.org")) }
                == .alreadyEnrolled)
        let removed = InvitationUserState(invitations: [], devices: [Self.device(revoked: true)], person: nil)
        #expect(
            try InvitationRules.invite(removed, Self.request(email: "a@example.org")).added != nil,
            "a removed device is no device")

        let first = try #require(try InvitationRules.invite(empty, Self.request(email: "a@example.org")).added)
        let open = InvitationUserState(invitations: [first], devices: [], person: nil)
        #expect(
            Self.refusal { try InvitationRules.invite(open, Self.request(email: "a@example.org")) } == .alreadyInvited)
        let later = Self.request(email: "a@example.org", at: first.expiresAt)
        #expect(try InvitationRules.invite(open, later).added != nil, "an expired one is no obstacle")
        let enrolledThenRemoved = InvitationUserState(
            invitations: [first], devices: [Self.device(createdAt: Self.t0 + 5, revoked: true)], person: nil)
        let again = try InvitationRules.invite(
            enrolledThenRemoved, Self.request(email: "a@example.org", at: Self.t0 + 9))
        #expect(again.added != nil, "one that was used is no obstacle either")
        #expect(again.withdrawn == [first] && again.withdrawnAt == Self.t0 + 9, "and its link, if unused, goes")
    }

    @Test("sent again: every open one withdrawn, a new link; withdrawn: only while open")
    func resendAndWithdraw() throws {
        let empty = InvitationUserState(invitations: [], devices: [], person: nil)
        let first = try #require(try InvitationRules.invite(empty, Self.request(email: "a@example.org")).added)
        let state = InvitationUserState(invitations: [first], devices: [], person: nil)
        let resent = try InvitationRules.resend(state, id: first.id, Self.request(at: Self.t0 + 60))
        #expect(resent.withdrawn == [first] && resent.withdrawnAt == Self.t0 + 60)
        #expect(resent.added?.email == "a@example.org" && resent.added?.tokenDigest != first.tokenDigest)
        #expect(resent.audit?.action == .invitationResent)
        let expired = try #require(
            try InvitationRules.invite(empty, Self.request(email: "a@example.org", at: Self.t0 - 30 * 86_400)).added)
        let both = InvitationUserState(invitations: [first, expired], devices: [], person: nil)
        #expect(
            try InvitationRules.resend(both, id: first.id, Self.request()).withdrawn == [first],
            "an expired one stays expired")
        let elsewhere = try InvitationRules.resend(state, id: first.id, Self.request(email: "b@example.org"))
        #expect(elsewhere.added?.email == "b@example.org")
        #expect(
            Self.refusal { try InvitationRules.resend(state, id: "inv_nope", Self.request()) } == .unknownInvitation)

        let withdrawn = try InvitationRules.withdraw(state, id: first.id, operatorName: "olivia", ip: "x", now: Self.t0)
        #expect(
            withdrawn.withdrawn == [first] && withdrawn.added == nil && withdrawn.audit?.action == .invitationWithdrawn)
        #expect(
            Self.refusal {
                try InvitationRules.withdraw(state, id: first.id, operatorName: "o", ip: "x", now: first.expiresAt)
            } == .notOpen)
        // Enrolled another way, the link still works until it expires: it can be withdrawn.
        let otherwise = InvitationUserState(
            invitations: [first], devices: [Self.device(createdAt: Self.t0 + 5)], person: nil)
        #expect(
            try InvitationRules.withdraw(otherwise, id: first.id, operatorName: "o", ip: "x", now: Self.t0 + 9)
                .withdrawn == [first])
    }

    @Test("where an invitation stands: withdrawn or enrolled, whichever came first; then expired; then its mail")
    func states() throws {
        let empty = InvitationUserState(invitations: [], devices: [], person: nil)
        var invitation = try #require(try InvitationRules.invite(empty, Self.request(email: "a@example.org")).added)
        let now = Self.t0 + 10
        #expect(InvitationRecord(invitation: invitation, mail: .queued).state(at: now) == .sending)
        #expect(InvitationRecord(invitation: invitation, mail: .delivered).state(at: now) == .sent)
        #expect(InvitationRecord(invitation: invitation, mail: nil).state(at: now) == .sent)
        #expect(InvitationRecord(invitation: invitation, mail: .failed).state(at: now) == .failed)
        #expect(InvitationRecord(invitation: invitation, mail: .queued).state(at: invitation.expiresAt) == .expired)
        #expect(InvitationRecord(invitation: invitation, mail: .failed, enrolledAt: now).state(at: now) == .enrolled)
        #expect(!InvitationRecord(invitation: invitation, mail: .delivered, enrolledAt: now).isOpen(at: now))
        invitation.withdrawnAt = now
        #expect(
            InvitationRecord(invitation: invitation, mail: .delivered, enrolledAt: now).state(at: now) == .withdrawn)
        #expect(
            InvitationRecord(invitation: invitation, mail: .delivered, enrolledAt: now + 1).state(at: now)
                == .withdrawn,
            "replaced, then an enrollment by the new link")
        #expect(
            InvitationRecord(invitation: invitation, mail: .delivered, enrolledAt: now - 1).state(at: now) == .enrolled,
            "enrolled, then the link withdrawn")
    }

    @Test("the mail's agent command quotes the user id for a shell")
    func quoting() {
        let mail = InvitationRules.mail(
            to: "a@example.org", appName: "App\nX", user: "o'brien", link: "https://b/approve/#x", token: "et_t",
            broker: "https://b", apiKeyID: "ck_app", expiresAt: Self.t0)
        #expect(mail.text.contains(#"--user='o'\''brien' --token et_t"#), "\(mail.text)")
        #expect(mail.subject == "Set up AppX sign-in approval", "no line break reaches a header")
    }

    @Test("directory groups: by DN in any case and spacing, or by the first RDN's value; counted once per person")
    func groups() {
        let people = [Self.person("alice"), Self.person("bob"), Self.person("carol", state: .disabled)]
        let groups = DirectoryGroup.all(in: people)
        #expect(groups.map(\.name) == ["Staff", "vpn-users"] && groups.map(\.members) == [3, 3])
        #expect(
            people[0].isMember(of: "VPN-USERS") && people[0].isMember(of: "cn=vpn-users, ou=groups,dc=example,dc=org"))
        #expect(people[0].isMember(of: "cn=staff,ou=groups,dc=example,dc=org"))
        #expect(!people[0].isMember(of: "vpn") && !people[0].isMember(of: "cn=vpn-users,dc=example,dc=org"))
        var elsewhere = Self.person("erin")
        elsewhere.groups = ["cn=staff,ou=contractors,dc=example,dc=org"]
        #expect(DirectoryGroup.named("staff", in: people + [elsewhere]).count == 2, "a name two branches share")
        #expect(DirectoryGroup.named("cn=staff,ou=contractors,dc=example,dc=org", in: people + [elsewhere]).count == 1)
    }
}
