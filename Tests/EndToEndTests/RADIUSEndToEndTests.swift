import AsyncHTTPClient
import CountersignClient
import CountersignCore
import CountersignPostgresTesting
import Foundation
import NIOCore
import Testing

/// The broker's RADIUS listener from outside, against independent clients:
/// pyrad (PyPI) through Tests/Fixtures/radius/pyrad-client.py, and
/// FreeRADIUS's `radclient` (Debian freeradius-utils).
@Suite("end to end: RADIUS logins approved on a device", .serialized)
struct RADIUSEndToEndTests {
    /// A broker answering RADIUS on a free UDP port, with a client named
    /// `office-vpn` registered for 127.0.0.1 by `device-broker radius add`.
    struct RADIUSBroker {
        var broker: LiveBroker
        let radiusPort: Int
        let secret: String
        var server: String { "127.0.0.1:\(radiusPort)" }

        static func start(
            mode: String = "challenge", arguments: [String] = [], database: String? = nil,
            clientArguments: [String] = [], port: Int? = nil, totp: Bool = true
        ) async throws -> RADIUSBroker {
            let port = try port ?? freeUDPPort()
            let broker = try await LiveBroker.start(
                arguments: ["--radius-listen", "127.0.0.1:\(port)"] + arguments, database: database, totp: totp)
            let add = try RunningProcess(
                "device-broker",
                ["radius", "add", "office-vpn", "--address", "127.0.0.1", "--api-key", broker.apiKeyID, "--mode", mode]
                    + clientArguments + broker.storeArguments)
            guard try await add.exitCode() == 0 else { throw ProcessFailure("radius add failed: \(add.text)") }
            let secret = try await add.waitFor(#"Shared secret \(shown once; give it to the NAS\): ([A-Za-z0-9]+)"#)
            let radius = RADIUSBroker(broker: broker, radiusPort: port, secret: secret)
            try await radius.waitUntilAnswering()
            return radius
        }

        /// Waits until the listener knows the client (read at its start, or
        /// at once when an unknown one asks): a Status-Server is answered.
        func waitUntilAnswering() async throws {
            var budget = WaitBudget(.seconds(60))
            while budget.left() {
                let status = try await pyrad(["--status-server", "--timeout", "1"])
                if status["code"] as? String == "Access-Accept" { return }
            }
            throw ProcessFailure("the RADIUS listener did not answer within a minute")
        }

        /// One request through pyrad; its answer as the script prints it.
        func pyrad(_ arguments: [String], secret: String? = nil) async throws -> [String: Any] {
            let script = try RunningProcess(
                "/usr/bin/env",
                ["python3", RADIUSEndToEndTests.client, "--server", server, "--secret", secret ?? self.secret]
                    + arguments)
            guard try await script.exitCode() == 0 else { throw ProcessFailure("pyrad client failed: \(script.text)") }
            return try JSONSerialization.jsonObject(with: Data(script.text.utf8)) as? [String: Any] ?? [:]
        }

        /// The user's pending requests, as their device's inbox lists them.
        func inbox(_ device: DeviceCredential, wait: Int = 10) async throws -> [InboxItem] {
            try await CountersignClient(for: device).inbox(device, wait: wait)
        }

        func stop() { broker.stop() }
    }

    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/radius/pyrad-client.py").path

    /// The number a challenge's Reply-Message tells the person to type.
    static func number(in answer: [String: Any]) throws -> String {
        let message = try #require(answer["reply_message"] as? String)
        return try #require(message.firstMatch(of: /type (\d+)/)).1.description
    }

    @Test("number matching through pyrad: a challenge with the number, approved on the device, then Accept")
    func challengeApproved() async throws {
        let radius = try await RADIUSBroker.start()
        defer { radius.stop() }
        let device = try await radius.broker.enrollDevice(user: "alice")

        let first = try await radius.pyrad(["--user", "alice"])
        #expect(first["code"] as? String == "Access-Challenge", "\(first)")
        #expect(first["verified"] as? Bool == true && first["message_authenticator_first"] as? Bool == true)
        let number = try Self.number(in: first)
        let state = try #require(first["state"] as? String)
        let timeout = try #require(first["session_timeout"] as? Int)
        #expect((1...60).contains(timeout), "Session-Timeout: the window left")

        // What the approver sees: the VPN's name and the person's address.
        let item = try #require(try await radius.inbox(device).first)
        #expect(item.event.requesterName == "office-vpn" && item.event.ip == "198.51.100.23", "\(item.event)")
        #expect(item.event.event == EventName.login && item.matchRequired && item.event.channel == .radius)

        // The person presses Enter while the device decides: held, then Accept.
        async let second = radius.pyrad(["--user", "alice", "--state", state])
        try await radius.broker.waitUntilHolding(1)
        _ = try await CountersignClient(for: device).decide(item, verdict: .approve, match: number, credential: device)
        let accepted = try await second
        #expect(accepted["code"] as? String == "Access-Accept", "\(accepted)")
        #expect(accepted["verified"] as? Bool == true)

        // The State is not taken for another user, nor at another client
        // of the same app (which may check a password this login never passed).
        let stolen = try await radius.pyrad(["--user", "mallory", "--state", state])
        #expect(stolen["code"] as? String == "Access-Reject", "\(stolen)")
        let other = try RunningProcess(
            "device-broker",
            ["radius", "add", "branch-vpn", "--address", "127.0.0.2", "--api-key", radius.broker.apiKeyID]
                + radius.broker.storeArguments)
        #expect(try await other.exitCode() == 0, "\(other.text)")
        let otherSecret = try await other.waitFor(#"Shared secret \(shown once; give it to the NAS\): ([A-Za-z0-9]+)"#)
        var elsewhere: [String: Any] = [:]
        var budget = WaitBudget(.seconds(60))
        while budget.left() {
            // Until the listener knows branch-vpn, its packets are dropped.
            elsewhere = try await radius.pyrad(
                ["--user", "alice", "--state", state, "--source", "127.0.0.2", "--timeout", "2"], secret: otherSecret)
            if !(elsewhere["code"] is NSNull) { break }
        }
        #expect(elsewhere["code"] as? String == "Access-Reject", "another client's: \(elsewhere)")
        var forged = state
        forged.removeLast(2)
        forged += "00"
        let guessed = try await radius.pyrad(["--user", "alice", "--state", forged])
        #expect(guessed["code"] as? String == "Access-Reject", "a State with another requester secret: \(guessed)")
    }

    @Test("a rejection on the device, and 'this wasn't me', answer Access-Reject")
    func rejected() async throws {
        let radius = try await RADIUSBroker.start()
        defer { radius.stop() }
        let device = try await radius.broker.enrollDevice(user: "alice")
        let first = try await radius.pyrad(["--user", "alice"])
        let state = try #require(first["state"] as? String)
        let item = try #require(try await radius.inbox(device).first)
        _ = try await CountersignClient(for: device).decide(item, verdict: .reject, match: nil, credential: device)
        let refused = try await radius.pyrad(["--user", "alice", "--state", state])
        #expect(refused["code"] as? String == "Access-Reject", "\(refused)")
        #expect((refused["reply_message"] as? String)?.contains("Refused") == true, "\(refused)")

        // "This wasn't me": refused, and the user protected from new prompts.
        let next = try await radius.pyrad(["--user", "alice"])
        let nextState = try #require(next["state"] as? String)
        let reported = try #require(try await radius.inbox(device).first)
        _ = try await CountersignClient(for: device).decide(reported, verdict: .fraud, match: nil, credential: device)
        let fraud = try await radius.pyrad(["--user", "alice", "--state", nextState])
        #expect(fraud["code"] as? String == "Access-Reject", "\(fraud)")
        #expect((fraud["reply_message"] as? String)?.contains("not yours") == true, "\(fraud)")
        let protected = try await radius.pyrad(["--user", "alice"])
        #expect(protected["code"] as? String == "Access-Reject", "no new prompt while protected: \(protected)")
        #expect(try await radius.inbox(device, wait: 0).isEmpty)
    }

    @Test("the wrong number typed on the device does not approve; the State's request is still refused after")
    func wrongNumber() async throws {
        let radius = try await RADIUSBroker.start(arguments: ["--radius-hold", "5s"])
        defer { radius.stop() }
        let device = try await radius.broker.enrollDevice(user: "alice")
        let first = try await radius.pyrad(["--user", "alice"])
        let number = try Self.number(in: first)
        let state = try #require(first["state"] as? String)
        let item = try #require(try await radius.inbox(device).first)
        let wrong = number == "10" ? "11" : "10"
        await #expect(throws: CountersignError.self) {
            try await CountersignClient(for: device).decide(item, verdict: .approve, match: wrong, credential: device)
        }
        // Still pending: the person is asked again, with the same State.
        let again = try await radius.pyrad(["--user", "alice", "--state", state], secret: nil)
        #expect(again["code"] as? String == "Access-Challenge", "\(again)")
        #expect((again["reply_message"] as? String)?.contains("Not approved yet") == true, "\(again)")
        #expect(again["state"] as? String == state)
    }

    @Test("push mode: the request waits for the approval, with no number; unanswered, it is withdrawn and refused")
    func push() async throws {
        let radius = try await RADIUSBroker.start(mode: "push", arguments: ["--radius-hold", "5s"])
        defer { radius.stop() }
        let device = try await radius.broker.enrollDevice(user: "alice")

        async let waiting = radius.pyrad(["--user", "alice"])
        let item = try #require(try await radius.inbox(device).first)
        #expect(!item.matchRequired, "nothing to type: the VPN client shows no number")
        _ = try await CountersignClient(for: device).decide(item, verdict: .approve, match: nil, credential: device)
        let accepted = try await waiting
        #expect(accepted["code"] as? String == "Access-Accept", "\(accepted)")

        // Nobody answers within the hold: refused, and the device's request gone.
        let unanswered = try await radius.pyrad(["--user", "alice"])
        #expect(unanswered["code"] as? String == "Access-Reject", "\(unanswered)")
        #expect((unanswered["reply_message"] as? String)?.contains("No answer in time") == true, "\(unanswered)")
        #expect(try await radius.inbox(device, wait: 0).isEmpty, "withdrawn: the device no longer lists it")
    }

    @Test("a wrong code typed as the challenge's response leaves the login open: asked again, then approved")
    func wrongCodeOnChallenge() async throws {
        let radius = try await RADIUSBroker.start(arguments: ["--radius-hold", "5s"])
        defer { radius.stop() }
        let device = try await radius.broker.enrollDevice(user: "alice")
        let first = try await radius.pyrad(["--user", "alice"])
        let state = try #require(first["state"] as? String)
        let guessed = try await radius.pyrad(["--user", "alice", "--state", state, "--password", "000000"])
        #expect(guessed["code"] as? String == "Access-Challenge" && guessed["state"] as? String == state, "\(guessed)")
        #expect((guessed["reply_message"] as? String)?.hasPrefix("That code is wrong. Approve") == true, "\(guessed)")
        let item = try #require(try await radius.inbox(device).first, "still pending on the device")
        _ = try await CountersignClient(for: device).decide(
            item, verdict: .approve, match: try Self.number(in: first), credential: device)
        let accepted = try await radius.pyrad(["--user", "alice", "--state", state])
        #expect(accepted["code"] as? String == "Access-Accept", "\(accepted)")
    }

    @Test("requests of the largest size RFC 2865 allows are read whole")
    func largePackets() async throws {
        let radius = try await RADIUSBroker.start()
        defer { radius.stop() }
        // 14 Proxy-States of 253 bytes: a request of some 3,700 bytes.
        let answer = try await radius.pyrad(["--user", "alice", "--pad", "14"])
        #expect(answer["code"] as? String == "Access-Challenge", "\(answer)")
        #expect((answer["request_length"] as? Int ?? 0) > 3500)
    }

    @Test("a user name is asked for from many addresses: the user is not locked out, as on the sign-in page")
    func noLockOut() async throws {
        let radius = try await RADIUSBroker.start()
        defer { radius.stop() }
        _ = try await radius.broker.enrollDevice(user: "alice")
        // More than a user's share of requesters' pending prompts (10).
        for index in 1...12 {
            let answer = try await radius.pyrad(["--user", "alice", "--calling-station-id", "198.51.100.\(index)"])
            #expect(answer["code"] as? String == "Access-Challenge", "request \(index): \(answer)")
        }
    }

    @Test("a TOTP code as the password approves once; the same code again and a wrong one are refused")
    func totpAsPassword() async throws {
        let radius = try await RADIUSBroker.start()
        defer { radius.stop() }
        let machine = try await radius.broker.enrollMachine(user: "alice", name: "laptop")
        let shown = try radius.broker.agent(["code", "--json"], configDirectory: machine)
        #expect(try await shown.exitCode() == 0, "\(shown.text)")
        let code = try await shown.waitFor(#""code" : "(\d{6})""#)

        let accepted = try await radius.pyrad(["--user", "alice", "--password", code])
        #expect(accepted["code"] as? String == "Access-Accept", "\(accepted)")
        #expect((accepted["reply_message"] as? String)?.contains("TOTP") == true, "\(accepted)")
        let replayed = try await radius.pyrad(["--user", "alice", "--password", code])
        #expect(replayed["code"] as? String == "Access-Reject", "\(replayed)")
        let wrong = String(format: "%06d", (Int(code)! + 1) % 1_000_000)
        let guessed = try await radius.pyrad(["--user", "alice", "--password", wrong])
        #expect(guessed["code"] as? String == "Access-Reject", "\(guessed)")

        // The approvals are recorded as LOGINs by TOTP, through the API.
        let events = try await radius.broker.backend.events(user: "alice")
        #expect(
            events.contains {
                $0.status == .approved && $0.method == .totp && $0.requesterName == "office-vpn"
                    && $0.channel == .radius
            })
        #expect(events.allSatisfy { $0.status != .pending }, "refused codes leave nothing pending: \(events)")
    }

    @Test("a broker without a TOTP key takes six digits as any password: the device is asked")
    func noTOTPKey() async throws {
        let radius = try await RADIUSBroker.start(totp: false)
        defer { radius.stop() }
        _ = try await radius.broker.enrollDevice(user: "alice")
        let answer = try await radius.pyrad(["--user", "alice", "--password", "123456"])
        #expect(answer["code"] as? String == "Access-Challenge", "\(answer)")
    }

    @Test("a request expires unanswered: the State's request is refused")
    func expiry() async throws {
        let radius = try await RADIUSBroker.start(arguments: ["--approval-window", "2s"])
        defer { radius.stop() }
        _ = try await radius.broker.enrollDevice(user: "alice")
        let first = try await radius.pyrad(["--user", "alice"])
        let state = try #require(first["state"] as? String)
        let refused = try await radius.pyrad(["--user", "alice", "--state", state])
        #expect(refused["code"] as? String == "Access-Reject", "\(refused)")
        #expect((refused["reply_message"] as? String)?.contains("No answer in time") == true, "\(refused)")
    }

    @Test(
        "dropped without an answer: a wrong secret, no or a forged Message-Authenticator, an address no client covers")
    func dropped() async throws {
        let radius = try await RADIUSBroker.start()
        defer { radius.stop() }
        let device = try await radius.broker.enrollDevice(user: "alice")
        let before = try await radius.broker.dropped()
        for (arguments, what) in [
            (["--timeout", "2"], "a wrong secret"),
            (["--timeout", "2", "--no-message-authenticator"], "no Message-Authenticator"),
            (["--timeout", "2", "--forge-message-authenticator"], "a forged Message-Authenticator"),
        ] {
            let secret = what == "a wrong secret" ? "another-secret-of-16+" : radius.secret
            let answer = try await radius.pyrad(["--user", "alice"] + arguments, secret: secret)
            #expect(answer["code"] is NSNull, "\(what): no answer, \(answer)")
        }
        // 127.0.0.2 is loopback too, but no client covers it.
        let script = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", "-c",
                """
                import socket, sys
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.2", 0)); s.settimeout(2)
                s.sendto(bytes([1, 7, 0, 20]) + bytes(16), ("127.0.0.1", \(radius.radiusPort)))
                try:
                    s.recvfrom(4096); print("answered")
                except socket.timeout:
                    print("no answer")
                """,
            ])
        #expect(try await script.exitCode() == 0 && script.text.contains("no answer"), "\(script.text)")
        #expect(try await radius.inbox(device, wait: 0).isEmpty, "none of them opened a request")
        #expect(try await radius.broker.dropped() == before + 4, "each counted as dropped")
    }

    @Test("an Accounting-Request is acknowledged, and dropped under a wrong secret")
    func accounting() async throws {
        let radius = try await RADIUSBroker.start()
        defer { radius.stop() }
        let answer = try await radius.pyrad(["--accounting"])
        #expect(answer["code"] as? String == "Accounting-Response" && answer["verified"] as? Bool == true, "\(answer)")
        let forged = try await radius.pyrad(["--accounting", "--timeout", "2"], secret: "another-secret-of-16+")
        #expect(forged["code"] is NSNull, "\(forged)")
    }

    @Test("a retransmitted request gets the same answer and opens no second request")
    func retransmission() async throws {
        let radius = try await RADIUSBroker.start()
        defer { radius.stop() }
        let device = try await radius.broker.enrollDevice(user: "alice")
        let script = try RunningProcess(
            "/usr/bin/env",
            ["python3", Self.client, "--server", radius.server, "--secret", radius.secret, "--send-twice"])
        #expect(try await script.exitCode() == 0, "\(script.text)")
        let answers = try #require(try JSONSerialization.jsonObject(with: Data(script.text.utf8)) as? [[String: Any]])
        #expect(answers.count == 2 && answers[0]["code"] as? String == "Access-Challenge", "\(answers)")
        #expect(answers[0]["state"] as? String == answers[1]["state"] as? String, "the same answer: \(answers)")
        #expect(try await radius.inbox(device).count == 1, "one request on the device")
    }

    @Test("answers are never more than four times the request's size")
    func amplification() async throws {
        let radius = try await RADIUSBroker.start()
        defer { radius.stop() }
        // The smallest request: a one-letter user, an empty password.
        let answer = try await radius.pyrad(["--user", "a", "--calling-station-id", "x"])
        let length = try #require(answer["length"] as? Int)
        let request = try #require(answer["request_length"] as? Int)
        #expect(answer["code"] as? String == "Access-Challenge" && length <= 4 * request, "\(answer)")
    }

    /// One request through FreeRADIUS's radclient; what it printed.
    static func radclient(_ radius: RADIUSBroker, _ attributes: String, secret: String? = nil, wait: Int = 40)
        async throws -> String
    {
        let run = try RunningProcess(
            "/usr/bin/env",
            [
                "sh", "-c", "printf '%s\\n' \"$0\" | radclient -x -t \(wait) -r 1 \(radius.server) auth \"$1\"",
                attributes, secret ?? radius.secret,
            ])
        _ = try await run.exitCode()
        return run.text
    }

    @Test("FreeRADIUS's radclient: the challenge, approved on the device, then Access-Accept")
    func radclient() async throws {
        let radius = try await RADIUSBroker.start()
        defer { radius.stop() }
        let device = try await radius.broker.enrollDevice(user: "alice")
        func radclient(_ attributes: String) async throws -> String { try await Self.radclient(radius, attributes) }
        let first = try await radclient(
            "User-Name = alice, User-Password = \"\", Message-Authenticator = 0x00, Calling-Station-Id = 203.0.113.5")
        #expect(first.contains("Received Access-Challenge"), "\(first)")
        let number = try #require(first.firstMatch(of: /type (\d+)/)).1
        let state = try #require(first.firstMatch(of: /State = (0x[0-9a-f]+)/)).1
        let item = try #require(try await radius.inbox(device).first)
        #expect(item.event.ip == "203.0.113.5")
        _ = try await CountersignClient(for: device).decide(
            item, verdict: .approve, match: String(number), credential: device)
        let second = try await radclient(
            "User-Name = alice, User-Password = \"\", Message-Authenticator = 0x00, State = \(state)")
        #expect(second.contains("Received Access-Accept"), "\(second)")
    }

    @Test("radclient: refused on the device, a TOTP code, a wrong secret, no Message-Authenticator, push mode")
    func radclientFlows() async throws {
        let radius = try await RADIUSBroker.start()
        defer { radius.stop() }
        let machine = try await radius.broker.enrollMachine(user: "alice", name: "laptop")
        let store = CredentialStore(directory: machine)
        let credential = try store.unlock(try #require(try store.accounts().first), pin: nil)
        let user = "User-Name = alice, Message-Authenticator = 0x00"

        let first = try await Self.radclient(radius, user + ", User-Password = \"\"")
        let state = try #require(first.firstMatch(of: /State = (0x[0-9a-f]+)/)).1
        let item = try #require(try await CountersignClient(for: credential).inbox(credential, wait: 10).first)
        _ = try await CountersignClient(for: credential).decide(
            item, verdict: .reject, match: nil, credential: credential)
        let refused = try await Self.radclient(radius, user + ", User-Password = \"\", State = \(state)")
        #expect(refused.contains("Received Access-Reject"), "\(refused)")

        let shown = try radius.broker.agent(["code", "--json"], configDirectory: machine)
        #expect(try await shown.exitCode() == 0, "\(shown.text)")
        let code = try await shown.waitFor(#""code" : "(\d{6})""#)
        let totp = try await Self.radclient(radius, user + ", User-Password = \"\(code)\"")
        #expect(totp.contains("Received Access-Accept"), "\(totp)")

        let wrongSecret = try await Self.radclient(
            radius, user + ", User-Password = \"\"", secret: "another-secret-of-16+", wait: 2)
        #expect(!wrongSecret.contains("Received"), "dropped: \(wrongSecret)")
        let bare = try await Self.radclient(radius, "User-Name = alice, User-Password = \"\"", wait: 2)
        #expect(!bare.contains("Received"), "dropped without a Message-Authenticator: \(bare)")

        // Push mode: the request waits for the approval.
        let pushing = try await RADIUSBroker.start(mode: "push")
        defer { pushing.stop() }
        let phone = try await pushing.broker.enrollDevice(user: "alice")
        async let waiting = Self.radclient(pushing, user + ", User-Password = \"\"")
        let pending = try #require(try await pushing.inbox(phone).first)
        #expect(!pending.matchRequired)
        _ = try await CountersignClient(for: phone).decide(pending, verdict: .approve, match: nil, credential: phone)
        let accepted = try await waiting.contains("Received Access-Accept")
        #expect(accepted, "push mode: the request waits for the approval, and is accepted")
    }

    @Test("an upstream FreeRADIUS checks the password first: a wrong one is refused with no prompt, the right one asks")
    func upstream() async throws {
        let freeradius = try await FreeRADIUSServer.start()
        defer { freeradius.stop() }
        let secretFile = try temporaryDirectory("upstream-secret").appendingPathComponent("secret")
        try Data((freeradius.secret + "\n").utf8).write(to: secretFile)
        let upstream = ["--upstream", "127.0.0.1:\(freeradius.port)", "--upstream-secret-file", secretFile.path]
        // Debian 12's FreeRADIUS (3.2.1) predates the BlastRADIUS fix: its
        // answers carry no Message-Authenticator.
        let radius = try await RADIUSBroker.start(
            clientArguments: upstream + ["--upstream-allow-missing-message-authenticator"])
        defer { radius.stop() }
        let device = try await radius.broker.enrollDevice(user: "alice")

        let wrong = try await radius.pyrad(["--user", "alice", "--password", "not it"])
        #expect(wrong["code"] as? String == "Access-Reject", "\(wrong)")
        #expect(try await radius.inbox(device, wait: 0).isEmpty, "the device is not asked")
        // Six digits are the password here, for the upstream, not a TOTP code.
        let digits = try await radius.pyrad(["--user", "alice", "--password", "123456"])
        #expect(digits["code"] as? String == "Access-Reject", "\(digits)")

        let right = try await radius.pyrad(["--user", "alice", "--password", FreeRADIUSServer.password])
        #expect(right["code"] as? String == "Access-Challenge", "\(right)")
        let state = try #require(right["state"] as? String)
        let item = try #require(try await radius.inbox(device).first)
        _ = try await CountersignClient(for: device).decide(
            item, verdict: .approve, match: try Self.number(in: right), credential: device)
        let accepted = try await radius.pyrad(["--user", "alice", "--state", state])
        #expect(accepted["code"] as? String == "Access-Accept", "\(accepted)")

        // Required (the default), its answers without one are not taken:
        // the NAS is not answered either.
        let set = try RunningProcess(
            "device-broker", ["radius", "set", "office-vpn"] + upstream + radius.broker.storeArguments)
        #expect(try await set.exitCode() == 0, "\(set.text)")
        var budget = WaitBudget(.seconds(60))
        var unanswered = false
        var pendingBefore = 0
        while !unanswered, budget.left() {
            // Until the listener re-reads the client, a request still asks.
            pendingBefore = try await radius.inbox(device, wait: 0).count
            let answer = try await radius.pyrad(
                ["--user", "alice", "--password", FreeRADIUSServer.password, "--timeout", "8"])
            unanswered = answer["code"] is NSNull
        }
        #expect(unanswered, "an upstream answer without a Message-Authenticator is refused once required")
        #expect(try await radius.inbox(device, wait: 0).count == pendingBefore, "and the device is not asked")
    }

    @Test("two instances on PostgreSQL: the challenge from one, the approval held and answered by the other")
    func twoInstances() async throws {
        let database = try await TestPostgres.createDatabase()
        let a = try await RADIUSBroker.start(database: database)
        let portB = try freeUDPPort()
        let b = RADIUSBroker(
            broker: try await a.broker.startInstance(arguments: ["--radius-listen", "127.0.0.1:\(portB)"]),
            radiusPort: portB, secret: a.secret)
        try await b.waitUntilAnswering()
        let device = try await a.broker.enrollDevice(user: "alice")

        let first = try await a.pyrad(["--user", "alice"])
        let state = try #require(first["state"] as? String)
        let item = try #require(try await a.inbox(device).first)
        async let second = b.pyrad(["--user", "alice", "--state", state])
        try await b.broker.waitUntilHolding(1)
        _ = try await CountersignClient(for: device).decide(
            item, verdict: .approve, match: try Self.number(in: first), credential: device)
        let accepted = try await second
        #expect(accepted["code"] as? String == "Access-Accept", "woken by A's decision: \(accepted)")
        a.stop()
        b.stop()
        try await TestPostgres.dropDatabase(database)
    }

    @Test("`radius` commands: list, rotate-secret (the old secret is then dropped), remove; bad input refused")
    func commands() async throws {
        let radius = try await RADIUSBroker.start()
        defer { radius.stop() }
        let store = radius.broker.storeArguments
        let list = try RunningProcess("device-broker", ["radius", "list"] + store)
        #expect(try await list.exitCode() == 0 && list.text.contains("office-vpn\t127.0.0.1/32"), "\(list.text)")
        #expect(!list.text.contains(radius.secret), "never the secret")

        for (arguments, message) in [
            (["add", "Bad Name", "--address", "10.0.0.0/8", "--api-key", radius.broker.apiKeyID], "name"),
            (["add", "vpn2", "--address", "10.0.0.0/33", "--api-key", radius.broker.apiKeyID], "CIDR"),
            (["add", "vpn2", "--address", "10.0.0.0/8", "--api-key", "ck_nobody"], "API key"),
            (["add", "office-vpn", "--address", "10.0.0.0/8", "--api-key", radius.broker.apiKeyID], "already"),
            (["remove", "nobody"], "no RADIUS client"),
        ] {
            let refused = try RunningProcess("device-broker", ["radius"] + arguments + store)
            #expect(try await refused.exitCode() != 0, "\(arguments)")
            #expect(refused.text.contains(message), "\(arguments): \(refused.text)")
        }
        let secretFile = try temporaryDirectory("radius-secret").appendingPathComponent("short")
        try Data("tooshort\n".utf8).write(to: secretFile)
        let short = try RunningProcess(
            "device-broker",
            ["radius", "rotate-secret", "office-vpn", "--secret-file", secretFile.path] + store)
        #expect(try await short.exitCode() != 0 && short.text.contains("16"), "\(short.text)")

        let rotate = try RunningProcess("device-broker", ["radius", "rotate-secret", "office-vpn", "--json"] + store)
        #expect(try await rotate.exitCode() == 0, "\(rotate.text)")
        let rotated = try #require(
            try JSONSerialization.jsonObject(with: rotate.json) as? [String: Any])
        let newSecret = try #require(rotated["secret"] as? String)
        // Every instance re-reads its clients within 10 s.
        var budget = WaitBudget(.seconds(60))
        var answered = false
        while !answered, budget.left() {
            let status = try await radius.pyrad(["--status-server", "--timeout", "1"], secret: newSecret)
            answered = status["code"] as? String == "Access-Accept"
        }
        #expect(answered, "the new secret is taken")
        let old = try await radius.pyrad(["--status-server", "--timeout", "1"])
        #expect(old["code"] is NSNull, "the old secret is not")

        let remove = try RunningProcess("device-broker", ["radius", "remove", "office-vpn"] + store)
        #expect(try await remove.exitCode() == 0, "\(remove.text)")
        let audit = try RunningProcess("device-broker", ["audit", "export"] + store)
        #expect(try await audit.exitCode() == 0)
        for action in ["radius_client.added", "radius_client.changed", "radius_client.removed"] {
            #expect(audit.text.contains(action), "\(action): \(audit.text)")
        }
    }
}

extension LiveBroker {
    /// RADIUS requests counted as dropped.
    func dropped() async throws -> Int {
        let text = try await metricsText()
        return text.firstMatch(of: /countersign_radius_requests_total\{outcome="dropped"\} (\d+)/).flatMap { Int($0.1) }
            ?? 0
    }
}

/// A real OpenVPN server and client (Tests/Fixtures/radius/openvpn-login.sh)
/// whose logins the broker's RADIUS listener checks, set up as docs/radius.md
/// says: Debian's plugin in push mode, or deploy/openvpn's script with number
/// matching.
@Suite("end to end: an OpenVPN login approved on a device", .serialized)
struct OpenVPNEndToEndTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/radius/openvpn-login.sh").path

    func login(_ radius: RADIUSEndToEndTests.RADIUSBroker, auth: String) throws -> RunningProcess {
        try RunningProcess(
            "/bin/bash", [Self.script],
            environment: [
                "RADIUS_PORT": String(radius.radiusPort), "RADIUS_SECRET": radius.secret, "AUTH": auth,
                "WORK": try temporaryDirectory("openvpn-\(auth)").path,
                "TAG": String(format: "%02d%02d", Int(getpid()) % 100, Int.random(in: 0..<100)),
            ])
    }

    @Test("Debian's openvpn-auth-radius, push mode: the tunnel comes up once the device approves")
    func plugin() async throws {
        // The plugin reads four digits of a port, and sends no Message-Authenticator.
        let radius = try await RADIUSEndToEndTests.RADIUSBroker.start(
            mode: "push", clientArguments: ["--allow-missing-message-authenticator"],
            port: try freeUDPPort(below: 10000))
        defer { radius.stop() }
        let device = try await radius.broker.enrollDevice(user: "alice")
        let vpn = try login(radius, auth: "plugin")
        let item = try #require(try await radius.inbox(device, wait: 30).first, "\(vpn.text)")
        #expect(item.event.channel == .radius && item.event.requesterName == "office-vpn" && !item.matchRequired)
        _ = try await CountersignClient(for: device).decide(item, verdict: .approve, match: nil, credential: device)
        #expect(try await vpn.exitCode(timeout: .seconds(180)) == 0, "\(vpn.text)")
        #expect(vpn.text.contains("tunnel up"), "\(vpn.text)")
    }

    @Test("deploy/openvpn's script, number matching: the number reaches the client; approved, the tunnel comes up")
    func script() async throws {
        let radius = try await RADIUSEndToEndTests.RADIUSBroker.start()
        defer { radius.stop() }
        let device = try await radius.broker.enrollDevice(user: "alice")
        let vpn = try login(radius, auth: "script")
        let item = try #require(try await radius.inbox(device, wait: 30).first, "\(vpn.text)")
        #expect(item.event.channel == .radius && item.matchRequired)
        // What the VPN client shows its user.
        let number = try await vpn.waitFor(#"shown: .*type (\d+)"#, timeout: .seconds(60))
        _ = try await CountersignClient(for: device).decide(item, verdict: .approve, match: number, credential: device)
        #expect(try await vpn.exitCode(timeout: .seconds(180)) == 0, "\(vpn.text)")
        #expect(vpn.text.contains("tunnel up"), "\(vpn.text)")
    }

    @Test("refused on the device: the client gets AUTH_FAILED")
    func refused() async throws {
        let radius = try await RADIUSEndToEndTests.RADIUSBroker.start()
        defer { radius.stop() }
        let device = try await radius.broker.enrollDevice(user: "alice")
        let vpn = try login(radius, auth: "script")
        let item = try #require(try await radius.inbox(device, wait: 30).first, "\(vpn.text)")
        _ = try await CountersignClient(for: device).decide(item, verdict: .reject, match: nil, credential: device)
        #expect(try await vpn.exitCode(timeout: .seconds(180)) == 3, "\(vpn.text)")
    }
}

/// FreeRADIUS (Debian's freeradius) as a client's upstream server: a
/// configuration of its own in a temporary directory, made from the
/// package's, with one user, alice, whose password is `password`.
struct FreeRADIUSServer {
    let process: RunningProcess
    let port: Int
    let secret = "upstream-secret-0123456789"
    static let password = "correct horse"

    static func start() async throws -> FreeRADIUSServer {
        let directory = try temporaryDirectory("freeradius").appendingPathComponent("raddb")
        let port = try freeUDPPort()
        let setup = try RunningProcess(
            "/usr/bin/env",
            [
                "sh", "-euc",
                """
                cp -a /etc/freeradius/3.0 "$0"
                cd "$0"
                rm -f sites-enabled/* mods-enabled/eap
                sed -i 's/^\tuser = freerad/#&/; s/^\tgroup = freerad/#&/' radiusd.conf
                printf 'server upstream {\n listen {\n  type = auth\n  ipaddr = 127.0.0.1\n  port = %s\n }\n authorize {\n  files\n  pap\n }\n authenticate {\n  Auth-Type PAP {\n   pap\n  }\n }\n}\n' "$1" > sites-enabled/upstream
                printf 'client broker {\n ipaddr = 127.0.0.1\n secret = upstream-secret-0123456789\n require_message_authenticator = yes\n}\n' > clients.conf
                printf 'alice\tCleartext-Password := "%s"\n\n' "$2" > mods-config/files/authorize
                """,
                directory.path, String(port), password,
            ])
        guard try await setup.exitCode() == 0 else { throw ProcessFailure("FreeRADIUS setup failed: \(setup.text)") }
        let process = try RunningProcess("/usr/sbin/freeradius", ["-f", "-l", "stdout", "-d", directory.path])
        _ = try await process.waitFor("(Ready to process requests)", timeout: .seconds(120))
        return FreeRADIUSServer(process: process, port: port)
    }

    func stop() { process.stop() }
}

/// A UDP port below `limit` nobody listens on right now.
func freeUDPPort(below limit: Int) throws -> Int {
    for _ in 0..<200 {
        let port = Int.random(in: 2000..<limit)
        let socketFD = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(socketFD) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        if bound { return port }
    }
    throw ProcessFailure("no free UDP port below \(limit)")
}

/// A UDP port nobody listens on right now.
func freeUDPPort() throws -> Int { try freePort(SOCK_DGRAM) }
