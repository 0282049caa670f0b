import CountersignClient
import CountersignCore
import Crypto
import Foundation
import NIOHTTP1
import Testing

/// Invitations from the console: a real broker mailing enrollment links
/// through a real SMTP server (aiosmtpd, scripts/smtp-test-server.py) to
/// people typed in and to a group of a real slapd; the links enroll real
/// agents.
@Suite("end to end: invitations by email")
struct InvitationEndToEndTests {
    typealias Attack = ConsoleAttackEndToEndTests
    typealias MailServer = SMTPSenderTests.MailServer

    /// A signed-in operator: the session cookie and the CSRF token.
    struct Session {
        let cookies: [String: String]
        let csrf: String

        func call(_ broker: LiveBroker, _ method: HTTPMethod, _ path: String, body: [String: Any]? = nil)
            async throws -> Attack.Answer
        {
            try await Attack.call(
                broker, method, "/console/api/" + path, cookies: cookies,
                headers: method == .GET ? [:] : ["X-CSRF-Token": csrf], body: body)
        }
    }

    static func signIn(_ broker: LiveBroker) async throws -> Session {
        let device = try await ConsoleBrowserTests.addOperator(broker, "olivia")
        let (attempt, number) = try await Attack.startSignIn(broker, "olivia")
        try await Attack.approve(broker, "olivia", device: device, number: number)
        let finished = try await Attack.finish(broker, attempt: attempt)
        return Session(
            cookies: ["countersign_console": try #require(finished.cookies["countersign_console"])],
            csrf: try #require(finished.json["csrf_token"] as? String))
    }

    /// Waits until the mail server has taken `count` messages.
    static func mail(_ server: MailServer, count: Int) async throws -> [[String: Any]] {
        for _ in 0..<240 {
            let messages = try server.messages()
            if messages.count >= count { return messages }
            try await Task.sleep(for: .milliseconds(250))
        }
        Issue.record("the mail server took \(try server.messages().count) messages, not \(count)")
        return try server.messages()
    }

    /// The message to `address`, its token and its agent command's words.
    static func invitation(in messages: [[String: Any]], to address: String) throws -> (
        body: String, token: String
    ) {
        let message = try #require(messages.last { ($0["rcpt_tos"] as? [String]) == [address] }, "mail to \(address)")
        let body = try #require(message["body"] as? String)
        let token = try #require(body.firstMatch(of: /--token (et_[A-Za-z0-9_-]+)/)?.1)
        return (body, String(token))
    }

    /// Enrolls a key with `token`: nil, or the broker's error code.
    static func enroll(_ broker: LiveBroker, user: String, token: String) async -> String? {
        let device = DeviceCredential(
            broker: broker.url, apiKeyID: broker.apiKeyID, clientUserID: user, privateKey: P256.Signing.PrivateKey(),
            name: "phone")
        do {
            _ = try await CountersignClient(for: device).enroll(device, enrollmentToken: token)
            return nil
        } catch let error as CountersignError {
            return error.code
        } catch {
            return "\(error)"
        }
    }

    static func states(_ broker: LiveBroker, _ session: Session, _ query: String = "") async throws -> [String: String]
    {
        let answer = try await session.call(broker, .GET, "invitations?" + query)
        #expect(answer.status == 200, "\(answer.json)")
        var states: [String: String] = [:]
        for line in answer.json["invitations"] as? [[String: Any]] ?? [] {
            states[line["user"] as? String ?? ""] = states[line["user"] as? String ?? ""] ?? line["state"] as? String
        }
        return states
    }

    @Test(
        "a directory group and people typed in get links by mail; a link enrolls once; resend and withdraw end the earlier link; who has not enrolled is listed"
    )
    func inviteEnrollResendWithdraw() async throws {
        let slapd = try await SlapdProcess.start()
        let server = try await MailServer.start(mode: "starttls")
        let broker = try await LiveBroker.start(
            arguments: try server.brokerArguments() + ["--trusted-proxy", "127.0.0.1/32"])
        defer {
            broker.stop()
            server.stop()
            slapd.stop()
        }
        _ = try await DirectoryEndToEndTests.sync(broker, try slapd.settings()).get()
        let session = try await Self.signIn(broker)

        let groups = try await session.call(broker, .GET, "directory/groups")
        let listed = try #require(groups.json["groups"] as? [[String: Any]])
        #expect(listed.contains { $0["name"] as? String == "vpn-users" && $0["members"] as? Int == 2 }, "\(listed)")

        // A typo anywhere sends nothing.
        let typo = try await session.call(
            broker, .POST, "invitations",
            body: [
                "api_key_id": broker.apiKeyID,
                "users": [
                    ["user": "erin", "email": "erin@example.net"], ["user": "frank", "email": "frank at home"],
                ],
            ])
        #expect(typo.status == 400 && (typo.json["message"] as? String ?? "").contains("users[1]"), "\(typo.json)")
        let doubled = try await session.call(
            broker, .POST, "invitations",
            body: [
                "api_key_id": broker.apiKeyID,
                "users": [["user": "erin"], ["user": "erin", "email": "e@example.net"]],
            ])
        #expect(
            doubled.status == 400 && (doubled.json["message"] as? String ?? "").contains("named twice"),
            "\(doubled.json)")
        let keyless = try await session.call(broker, .POST, "invitations", body: ["users": [["user": "erin"]]])
        #expect(keyless.status == 400, "\(keyless.json)")
        #expect(try await Self.states(broker, session).isEmpty)
        // Without the CSRF token, nothing either.
        let forged = try await Attack.call(
            broker, .POST, "/console/api/invitations", cookies: session.cookies,
            body: ["api_key_id": broker.apiKeyID, "users": [["user": "erin", "email": "erin@example.net"]]])
        #expect(forged.status == 403 && forged.json["error"] as? String == "csrf")

        let sent = try await session.call(
            broker, .POST, "invitations",
            body: [
                "api_key_id": broker.apiKeyID, "group": "vpn-users", "expires_in": 86400,
                "users": [["user": "carol"], ["user": "erin", "email": "Erin@Example.NET"], ["user": "zoe"]],
            ])
        #expect(sent.status == 200, "\(sent.json)")
        let dates = ISO8601DateFormatter()
        dates.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for line in sent.json["invited"] as? [[String: Any]] ?? [] {
            let made = try #require(dates.date(from: line["created_at"] as? String ?? ""))
            let ends = try #require(dates.date(from: line["expires_at"] as? String ?? ""))
            #expect(abs(ends.timeIntervalSince(made) - 86400) < 1, "the lifetime asked for: \(line)")
        }
        let invited = (sent.json["invited"] as? [[String: Any]] ?? []).compactMap { $0["user"] as? String }
        #expect(Set(invited) == ["alice", "bob", "erin"], "\(sent.json)")
        let refused = Dictionary(
            uniqueKeysWithValues: (sent.json["refused"] as? [[String: Any]] ?? []).map {
                ($0["user"] as? String ?? "", $0["error"] as? String ?? "")
            })
        #expect(refused == ["carol": "user_suspended", "zoe": "no_email"], "\(sent.json)")

        let messages = try await Self.mail(server, count: 3)
        #expect(
            Set(messages.compactMap { ($0["rcpt_tos"] as? [String])?.first }) == [
                "alice@example.org", "bob@example.org", "erin@example.net",
            ])
        #expect(messages.allSatisfy { $0["tls"] as? Bool == true })
        let alice = try Self.invitation(in: messages, to: "alice@example.org")
        #expect(alice.body.contains("/approve/#enroll=\(alice.token)&api_key=\(broker.apiKeyID)&user=alice"))
        #expect(alice.body.contains("--user='alice'"), "\(alice.body)")
        let headers = try #require(messages.first?["headers"] as? [String: String])
        #expect(headers["Subject"] == "Set up demo sign-in approval", "\(headers)")
        #expect(try await Self.states(broker, session)["alice"] == "sent")

        // alice runs the command from her mail on her laptop.
        let command = try #require(
            alice.body.split(whereSeparator: \.isNewline).first { $0.hasPrefix("device-agent enroll") })
        let laptop = try temporaryDirectory("invited-laptop").appendingPathComponent("countersign")
        #expect(command.contains("--broker http://localhost:"), "a loopback broker is named by name: \(command)")
        let enroll = try RunningProcess(
            "device-agent",
            ["enroll", "--broker", broker.url, "--api-key", broker.apiKeyID, "--user", "alice", "--token", alice.token]
                + ["--name", "alice-laptop", "--config-dir", laptop.path])
        #expect(try await enroll.exitCode(timeout: .seconds(120)) == 0, "\(enroll.text)")
        #expect(await Self.enroll(broker, user: "alice", token: alice.token) == "invalid_enrollment_token", "once")
        var states = try await Self.states(broker, session)
        #expect(states["alice"] == "enrolled" && states["bob"] == "sent", "\(states)")
        #expect(Set(try await Self.states(broker, session, "state=open").keys) == ["bob", "erin"])
        for bad in ["state=", "state=OPEN", "limit=0", "limit=201"] {
            #expect(try await session.call(broker, .GET, "invitations?" + bad).status == 400, "\(bad)")
        }

        // The same group again: nobody is mailed twice.
        let again = try await session.call(
            broker, .POST, "invitations",
            body: ["api_key_id": broker.apiKeyID, "group": "cn=VPN-users, ou=groups,dc=example,dc=org"])
        #expect((again.json["invited"] as? [Any])?.isEmpty == true, "\(again.json)")
        let reasons = (again.json["refused"] as? [[String: Any]] ?? []).compactMap { $0["error"] as? String }
        #expect(reasons.sorted() == ["already_enrolled", "already_invited"], "\(again.json)")

        // bob's mail was lost: a new link, and the old one stops working.
        let list = try await session.call(broker, .GET, "invitations?state=open&prefix=bob")
        let bobID = try #require((list.json["invitations"] as? [[String: Any]])?.first?["id"] as? String)
        let bobFirst = try Self.invitation(in: messages, to: "bob@example.org")
        let resent = try await session.call(broker, .POST, "invitations/\(bobID)/resend")
        #expect(resent.status == 201 && resent.json["id"] as? String != bobID, "\(resent.json)")
        let bobSecond = try Self.invitation(in: try await Self.mail(server, count: 4), to: "bob@example.org")
        #expect(bobSecond.token != bobFirst.token)
        #expect(await Self.enroll(broker, user: "bob", token: bobFirst.token) == "invalid_enrollment_token")
        #expect(await Self.enroll(broker, user: "bob", token: bobSecond.token) == nil)

        // erin's invitation is withdrawn: her link stops working at once.
        let erin = try await session.call(broker, .GET, "invitations?prefix=erin")
        let erinID = try #require((erin.json["invitations"] as? [[String: Any]])?.first?["id"] as? String)
        let withdrawn = try await session.call(broker, .POST, "invitations/\(erinID)/withdraw")
        #expect(withdrawn.status == 200 && withdrawn.json["state"] as? String == "withdrawn", "\(withdrawn.json)")
        let twice = try await session.call(broker, .POST, "invitations/\(erinID)/withdraw")
        #expect(twice.status == 409 && twice.json["error"] as? String == "invitation_closed", "\(twice.json)")
        let erinToken = try Self.invitation(in: messages, to: "erin@example.net").token
        #expect(await Self.enroll(broker, user: "erin", token: erinToken) == "invalid_enrollment_token")
        // hank is invited, then enrolled another way: his link still works
        // until it expires, so the operator withdraws it.
        let hankSent = try await session.call(
            broker, .POST, "invitations",
            body: ["api_key_id": broker.apiKeyID, "users": [["user": "hank", "email": "hank@example.net"]]])
        let hankID = try #require((hankSent.json["invited"] as? [[String: Any]])?.first?["id"] as? String)
        let hankToken = try Self.invitation(in: try await Self.mail(server, count: 5), to: "hank@example.net").token
        _ = try await broker.enrollDevice(user: "hank", name: "hank-phone")
        #expect(try await Self.states(broker, session)["hank"] == "enrolled")
        let hankWithdrawn = try await session.call(broker, .POST, "invitations/\(hankID)/withdraw")
        #expect(
            hankWithdrawn.status == 200 && hankWithdrawn.json["state"] as? String == "enrolled", "\(hankWithdrawn.json)"
        )
        #expect(await Self.enroll(broker, user: "hank", token: hankToken) == "invalid_enrollment_token")

        states = try await Self.states(broker, session)
        #expect(
            states == ["alice": "enrolled", "bob": "enrolled", "erin": "withdrawn", "hank": "enrolled"], "\(states)")
        #expect(try await Self.states(broker, session, "state=open").isEmpty)

        // Every step is in the audit log, by the operator.
        let audit = try await session.call(broker, .GET, "audit?actor=olivia")
        let actions = (audit.json["records"] as? [[String: Any]] ?? []).compactMap { $0["action"] as? String }
        #expect(actions.filter { $0 == "invitation.sent" }.count == 4, "alice, bob, erin, hank: \(actions)")
        #expect(actions.contains("invitation.resent") && actions.contains("invitation.withdrawn"), "\(actions)")
    }

    @Test(
        "the mail server away: the invitation waits and goes once it is back; an address it refuses fails at once; no mail sender, no invitations"
    )
    func mailServerAway() async throws {
        let server = try await MailServer.start(mode: "starttls")
        let forwarder = try await TCPForwarder.start(to: server.port)
        try forwarder.refuse()
        let broker = try await LiveBroker.start(
            arguments: try server.brokerArguments(port: forwarder.port) + ["--trusted-proxy", "127.0.0.1/32"])
        defer {
            broker.stop()
            forwarder.stop()
            server.stop()
        }
        let session = try await Self.signIn(broker)
        let sent = try await session.call(
            broker, .POST, "invitations",
            body: [
                "api_key_id": broker.apiKeyID,
                "users": [
                    ["user": "gina", "email": "gina@example.org"], ["user": "nobody", "email": "x@refused.test"],
                ],
            ])
        #expect((sent.json["invited"] as? [Any])?.count == 2, "\(sent.json)")
        // Tried, refused by the network, kept for later.
        var waiting: [String: Any] = [:]
        for _ in 0..<240 {
            let answer = try await session.call(broker, .GET, "invitations?prefix=gina")
            waiting = (answer.json["invitations"] as? [[String: Any]])?.first ?? [:]
            if waiting["mail_error"] != nil { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(waiting["state"] as? String == "sending" && waiting["mail_error"] != nil, "\(waiting)")
        #expect(try server.messages().isEmpty)

        try forwarder.forward(to: server.port)
        let messages = try await Self.mail(server, count: 1)
        #expect(messages.map { $0["rcpt_tos"] as? [String] } == [["gina@example.org"]])
        var states: [String: String] = [:]
        for _ in 0..<240 {
            states = try await Self.states(broker, session)
            if states["nobody"] == "failed" && states["gina"] == "sent" { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(states == ["gina": "sent", "nobody": "failed"], "\(states)")
        let failed = try await session.call(broker, .GET, "invitations?prefix=nobody")
        let line = try #require((failed.json["invitations"] as? [[String: Any]])?.first)
        #expect((line["mail_error"] as? String ?? "").contains("550"), "\(line)")

        // A broker whose codes go to a webhook sends no mail, and says so.
        let secret = try temporaryDirectory("hook").appendingPathComponent("secret")
        try Data(repeating: 0x61, count: 40).write(to: secret)
        let hooked = try await LiveBroker.start(
            arguments: [
                "--sender", "webhook", "--webhook-url", "http://127.0.0.1:9/codes", "--webhook-secret-file",
                secret.path, "--trusted-proxy", "127.0.0.1/32",
            ])
        defer { hooked.stop() }
        let other = try await Self.signIn(hooked)
        let refused = try await other.call(
            hooked, .POST, "invitations",
            body: ["api_key_id": hooked.apiKeyID, "users": [["user": "gina", "email": "gina@example.org"]]])
        #expect(refused.status == 409 && refused.json["error"] as? String == "no_mail_sender", "\(refused.json)")
    }
}
