import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Foundation
import NIOCore
import Testing

/// The real `device-broker` and two real `device-agent` machines (separate
/// config directories) over loopback HTTP.
@Suite("end to end: real broker and agent processes", .serialized)
struct ApprovalEndToEndTests {
    struct LoginOutput: Decodable {
        let event: EventDocument
        let token: String?
    }

    func output(of process: RunningProcess) throws -> LoginOutput {
        let text = process.text
        guard let start = text.firstIndex(of: "{"), let end = text.lastIndex(of: "}") else {
            throw ProcessFailure("no JSON in:\n\(text)")
        }
        return try WireCoding.decoder().decode(LoginOutput.self, from: Data(text[start...end].utf8))
    }

    /// B woke on the decision, not at the end of the ten-minute window: a
    /// wake at its end would outlast the time limit.
    @Test(
        "approve: B waits, A approves with the number, B wakes with a token the JWKS verifies",
        .timeLimit(.minutes(8)))
    func approve() async throws {
        // A ten-minute window: a wake at its end would be unmistakable.
        let broker = try await LiveBroker.start(arguments: ["--approval-window", "10m"])
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let machineB = try temporaryDirectory("agent-B")
        let (login, eventID, number) = try await broker.startLogin(machine: machineB)

        let approve = try broker.agent(
            ["approve", "--event", eventID, "--yes", "--match", number], configDirectory: machineA)
        #expect(try await approve.exitCode() == 0, "\(approve.text)")
        #expect(try await login.exitCode() == 0, "\(login.text)")

        let result = try output(of: login)
        #expect(result.event.ID == eventID && result.event.status == .approved && result.event.approved)
        #expect(!result.event.new && result.event.method == .trustedDevice)
        let token = try #require(result.token)
        let claims = try await BrokerTokenVerifier.fetch(broker: broker.url).verifyEventToken(
            token, apiKeyID: broker.apiKeyID)
        #expect(claims.jti == eventID && claims.approved && claims.sub == "alice")

        // A JOSE library of another ecosystem verifies it with the JWKS alone.
        let python = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", scriptsDirectory.appendingPathComponent("verify-event-token.py").path, broker.url,
                broker.apiKeyID, token,
            ])
        #expect(try await python.exitCode() == 0, "\(python.text)")
        #expect(python.text.contains(#""approved": true"#))

        // The backend sees the same outcome.
        let event = try await broker.backend.event(id: eventID)
        #expect(event.status == .approved && event.decidedBy != nil)
    }

    @Test("after three rejections the next login shows six digits, and approve asks for six")
    func hardenedNumber() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let machineB = try temporaryDirectory("agent-B").appendingPathComponent("countersign")
        for _ in 0..<MatchNumberRule.hardenAfter {
            let (login, eventID, number) = try await broker.startLogin(machine: machineB)
            #expect(number.count == 2)
            let reject = try broker.agent(["approve", "--event", eventID, "--reject"], configDirectory: machineA)
            #expect(try await reject.exitCode() == 0, "\(reject.text)")
            #expect(try await login.exitCode() == 3)
        }
        let (login, _, number) = try await broker.startLogin(machine: machineB)
        #expect(number.count == 6, "\(login.text)")
        // Two digits are asked again, as any answer of the wrong length.
        let approve = try broker.agent(
            ["approve"], configDirectory: machineA, stdin: "y\n\(number.prefix(2))\n\(number)\n")
        #expect(try await approve.exitCode() == 0, "\(approve.text)")
        #expect(approve.text.contains("Type the 6 digits shown on the requesting machine."), "\(approve.text)")
        #expect(try await login.exitCode() == 0, "\(login.text)")
    }

    @Test("interactive approve: y, then the number typed at the prompt, with one wrong try")
    func interactiveApprove() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let (login, _, number) = try await broker.startLogin(machine: try temporaryDirectory("agent-B"))
        // An unclear answer is asked again, never taken as a no; a wrong number
        // (numbers run 10-99) is asked again while tries remain.
        let approve = try broker.agent(
            ["approve"], configDirectory: machineA, stdin: "maybe\ny\n00\n\(number)\n", environment: ["TZ": "Etc/UTC"])
        #expect(try await approve.exitCode() == 0, "\(approve.text)")
        #expect(approve.text.contains("Please answer y, n or f."))
        #expect(approve.text.contains("2 tries left"))
        #expect(approve.text.contains("Approved."))
        #expect(approve.text.contains("Log-in request for alice at demo"))
        #expect(approve.text.contains("machine-B"))
        // The time with its zone (the agent runs in UTC here).
        #expect(approve.text.firstMatch(of: /requested: .*\d\d:\d\d.*UTC/) != nil, "\(approve.text)")
        #expect(try await login.exitCode() == 0, "\(login.text)")
    }

    @Test("a request that needs a passkey this machine lacks: yes is not offered, and refused if typed")
    func rejectOnly() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let ticket = try await broker.backend.requestApproval(
            user: "alice", details: "Pay 40.00 EUR to ACME", numberMatching: false, userVerification: true)
        let approve = try broker.agent(
            ["approve", "--event", ticket.event.ID], configDirectory: laptop, stdin: "y\nn\n")
        #expect(try await approve.exitCode() == 0, "\(approve.text)")
        #expect(approve.text.contains("here it can only be rejected"), "\(approve.text)")
        #expect(approve.text.contains("Answer: [n] reject, or [f] this wasn't me"), "\(approve.text)")
        #expect(!approve.text.contains("[y]es"), "\(approve.text)")
        #expect(approve.text.contains("This machine cannot approve it (no passkey)"), "\(approve.text)")
        #expect(try await broker.backend.event(id: ticket.event.ID).status == .rejected)
    }

    @Test("reject: B exits 3 with a clear message")
    func reject() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let (login, eventID, _) = try await broker.startLogin(machine: try temporaryDirectory("agent-B"))
        let reject = try broker.agent(["approve", "--event", eventID, "--reject"], configDirectory: machineA)
        #expect(try await reject.exitCode() == 0, "\(reject.text)")
        #expect(try await login.exitCode() == 3, "\(login.text)")
        #expect(login.text.contains("Rejected"))
        #expect(try output(of: login).event.status == .rejected)
    }

    @Test("expire: nobody answers within the window; B exits 4")
    func expire() async throws {
        let broker = try await LiveBroker.start(arguments: ["--approval-window", "2s"])
        defer { broker.stop() }
        _ = try await broker.enrollMachine(name: "laptop-A")
        let (login, _, _) = try await broker.startLogin(machine: try temporaryDirectory("agent-B"))
        #expect(try await login.exitCode(timeout: .seconds(30)) == 4, "\(login.text)")
        #expect(login.text.contains("Expired"))
        #expect(try output(of: login).event.status == .expired)
    }

    @Test("a trusted device logs itself in at once; a wrong number is refused")
    func trustedSelfLoginAndWrongNumber() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let own = try broker.agent(["login", "--json"], configDirectory: machineA)
        #expect(try await own.exitCode() == 0, "\(own.text)")
        let result = try output(of: own)
        #expect(result.event.approved && !result.event.new && result.event.method == .trustedDevice)
        #expect(result.token != nil)

        let (login, eventID, number) = try await broker.startLogin(machine: try temporaryDirectory("agent-B"))
        let wrong = number == "10" ? "11" : "10"
        let refused = try broker.agent(
            ["approve", "--event", eventID, "--yes", "--match", wrong], configDirectory: machineA)
        #expect(try await refused.exitCode() == 1)
        #expect(refused.text.contains("not the number"))
        let approve = try broker.agent(
            ["approve", "--event", eventID, "--yes", "--match", number], configDirectory: machineA)
        #expect(try await approve.exitCode() == 0, "\(approve.text)")
        #expect(try await login.exitCode() == 0, "\(login.text)")
    }

    @Test("an acknowledged decision survives the broker being killed")
    func durableDecision() async throws {
        let broker = try await LiveBroker.start()
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let (login, eventID, number) = try await broker.startLogin(machine: try temporaryDirectory("agent-B"))
        let approve = try broker.agent(
            ["approve", "--event", eventID, "--yes", "--match", number], configDirectory: machineA)
        #expect(try await approve.exitCode() == 0, "\(approve.text)")
        #expect(try await login.exitCode() == 0, "\(login.text)")
        let restarted = try await broker.killAndRestart()
        defer { restarted.stop() }
        let event = try await restarted.backend.event(id: eventID)
        #expect(event.status == .approved && event.decision != nil && event.signature != nil)
        // The signing key survived too: the new process's tokens verify with the old JWKS kid.
        let claims = try await BrokerTokenVerifier.fetch(broker: restarted.url).verifyEventToken(event.signature!)
        #expect(claims.jti == eventID)
    }

    @Test("the agent keeps its key in a file only its owner can read")
    func keyFileMode() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let files = try FileManager.default.contentsOfDirectory(atPath: machineA.path)
        #expect(files.count == 1)
        let attributes = try FileManager.default.attributesOfItem(
            atPath: machineA.appendingPathComponent(files[0]).path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let directory = try FileManager.default.attributesOfItem(atPath: machineA.path)
        #expect((directory[.posixPermissions] as? Int) == 0o700)
    }

    @Test("approve --event for a request the broker does not know says so at once and exits 6")
    func unknownRequest() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machine = try await broker.enrollMachine(name: "laptop-A")
        _ = try await broker.backend.requestApproval(user: "alice", details: "another request")
        // A --timeout far beyond the test's wait: an exit at all shows the
        // agent did not wait it out.
        let approve = try broker.agent(
            ["approve", "--event", "ev_not_pending", "--timeout", "3600"], configDirectory: machine)
        #expect(try await approve.exitCode(timeout: .seconds(120)) == 6, "\(approve.text)")
        #expect(approve.text.contains("No request ev_not_pending"), "\(approve.text)")
    }

    @Test("approve --event for a request that ended says at once how (withdrawn, approved, expired) and exits 6")
    func endedRequest() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machine = try await broker.enrollMachine(name: "laptop-A")
        // A --timeout far beyond the test's wait: an exit at all shows the
        // agent did not wait it out.
        func approve(_ id: String, _ flags: [String] = []) throws -> RunningProcess {
            try broker.agent(["approve", "--event", id, "--timeout", "3600"] + flags, configDirectory: machine)
        }

        let withdrawn = try await broker.backend.requestApproval(user: "alice", numberMatching: false)
        _ = try await CountersignClient(broker: broker.url, apiKeyID: broker.apiKeyID).withdraw(withdrawn)
        let late = try approve(withdrawn.event.ID, ["--yes"])
        #expect(try await late.exitCode(timeout: .seconds(120)) == 6, "\(late.text)")
        #expect(late.text.contains("Request \(withdrawn.event.ID) was withdrawn by the machine that asked"))

        let decided = try await broker.backend.requestApproval(user: "alice", numberMatching: false)
        let first = try approve(decided.event.ID, ["--yes"])
        #expect(try await first.exitCode(timeout: .seconds(120)) == 0, "\(first.text)")
        let second = try approve(decided.event.ID, ["--reject"])
        #expect(try await second.exitCode(timeout: .seconds(120)) == 6, "\(second.text)")
        #expect(second.text.contains("was approved already"), "\(second.text)")

        let short = try await LiveBroker.start(arguments: ["--approval-window", "1s"])
        defer { short.stop() }
        let phone = try await short.enrollMachine(name: "phone")
        let expired = try await short.backend.requestApproval(user: "alice", numberMatching: false)
        while try await short.backend.event(id: expired.event.ID, wait: 5).status == .pending {}
        let tooLate = try short.agent(
            ["approve", "--event", expired.event.ID, "--timeout", "3600", "--yes"], configDirectory: phone)
        #expect(try await tooLate.exitCode(timeout: .seconds(120)) == 6, "\(tooLate.text)")
        #expect(tooLate.text.contains("expired before it was answered"), "\(tooLate.text)")
    }

    @Test("enroll with a token the broker refuses leaves no config directory behind, and keeps one that was there")
    func refusedEnrollmentLeavesNothing() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let fresh = try temporaryDirectory("machine-fresh").appendingPathComponent("countersign")
        let refused = try broker.agent(["enroll", "--token", "et_not_a_token", "--name", "pc"], configDirectory: fresh)
        #expect(try await refused.exitCode(timeout: .seconds(60)) != 0, "\(refused.text)")
        #expect(!FileManager.default.fileExists(atPath: fresh.path), "the directory it made is gone")

        let enrolled = try await broker.enrollMachine(name: "laptop-A")
        let again = try broker.agent(
            ["enroll", "--token", "et_not_a_token", "--name", "pc"], configDirectory: enrolled, user: "bob")
        #expect(try await again.exitCode(timeout: .seconds(60)) != 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: enrolled.path)
        #expect(files.count == 1, "alice's key is kept: \(files)")
    }
}
