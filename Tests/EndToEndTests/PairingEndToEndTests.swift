import CountersignClient
import CountersignCore
import Foundation
import Testing

/// Adding and removing trusted devices with real broker and agent processes.
@Suite("end to end: pairing and removing devices", .serialized)
struct PairingEndToEndTests {
    /// A broker with alice's machine A, and machine B asking to be paired:
    /// B's process, the pairing event id, A's and B's config directories.
    func startPairing() async throws -> (LiveBroker, RunningProcess, String, machineA: URL, machineB: URL) {
        let broker = try await LiveBroker.start()
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let machineB = try temporaryDirectory("agent-B").appendingPathComponent("countersign")
        let pairing = try broker.agent(["enroll", "--pair", "--name", "desktop-B"], configDirectory: machineB)
        let eventID = try await pairing.waitFor(#"Pairing request (ev_[A-Za-z0-9_-]+) sent"#)
        return (broker, pairing, eventID, machineA, machineB)
    }

    /// What `approve` and `devices add-phone` ask for a pairing: the code,
    /// which approves it, or a refusal on the same line.
    static let codePrompt =
        #"Type the 6-digit code the new device shows to add it; Enter or \[n\]o refuses, \[f\] this wasn't me: "#

    @Test(
        "devices add-phone: a link on the address the phone reaches, a pairing refused with an empty line exits 3 and adds nothing, none in time exits 5"
    )
    func addPhoneOutcomes() async throws {
        let (broker, pairing, _, machineA, _) = try await startPairing()
        defer { broker.stop() }
        let addPhone = try broker.agent(
            ["devices", "add-phone", "--approver-url", "https://auth.example.com"], configDirectory: machineA,
            keepingInputOpen: true)
        defer { addPhone.stop() }
        let link = try await addPhone.waitFor(#"Or open: (\S+)"#)
        #expect(link == "https://auth.example.com/approve/#pair&api_key=\(broker.apiKeyID)&user=alice")
        _ = try await addPhone.waitFor(Self.codePrompt)
        #expect(!addPhone.text.contains("a phone cannot open"), "no loopback note for a reachable address")
        #expect(!addPhone.text.contains("Approve this request"), "the code is asked first: \(addPhone.text)")
        addPhone.send("\n")
        #expect(try await addPhone.exitCode() == 3, "\(addPhone.text)")
        #expect(addPhone.text.contains("The pairing was refused; the phone was not added."))
        #expect(try await pairing.exitCode() != 0, "the refused machine is told: \(pairing.text)")
        #expect(try await broker.backend.devices(user: "alice").map(\.name) == ["laptop-A"])

        // On the broker's loopback URL the command warns that a phone cannot open the link.
        let unanswered = try broker.agent(["devices", "add-phone", "--timeout", "1"], configDirectory: machineA)
        #expect(try await unanswered.exitCode() == 5, "\(unanswered.text)")
        #expect(unanswered.text.contains("this machine itself, which a phone cannot open"), "\(unanswered.text)")
        #expect(unanswered.text.contains("No pairing request arrived within 1 s."))

        // Plain http on a LAN address: the phone's browser would refuse the page's keys.
        let lan = try broker.agent(
            ["devices", "add-phone", "--timeout", "1", "--approver-url", "http://192.168.1.5:8080"],
            configDirectory: machineA)
        #expect(try await lan.exitCode() == 5, "\(lan.text)")
        #expect(lan.text.contains("the link is plain http"), "\(lan.text)")
        #expect(!addPhone.text.contains("plain http"), "no such note for https")

        for bad in ["ftp://auth.example.com", "https://auth.example.com/?x=1", "auth.example.com"] {
            let refused = try broker.agent(["devices", "add-phone", "--approver-url", bad], configDirectory: machineA)
            #expect(try await refused.exitCode() == 64, "\(bad): \(refused.text)")
            #expect(refused.text.contains("--approver-url must be an http or https URL"), "\(refused.text)")
        }
    }

    @Test("pair B from A, approve a login with B, remove A: A's approvals are refused, A is no longer trusted")
    func pairApproveRemove() async throws {
        // B asks to be added; A checks the fingerprint and types the code.
        let (broker, pairing, eventID, machineA, machineB) = try await startPairing()
        defer { broker.stop() }
        let code = try await pairing.waitFor(#"Pairing code: (\d{6})"#)
        let fingerprint = try await pairing.waitFor(#"Fingerprint:  ([0-9A-F-]+)"#)
        let approve = try broker.agent(
            ["approve", "--event", eventID, "--yes", "--match", code], configDirectory: machineA)
        #expect(try await approve.exitCode() == 0, "\(approve.text)")
        #expect(approve.text.contains("Add a new device for alice at demo"), "\(approve.text)")
        #expect(approve.text.contains("device:    desktop-B (cli)") && approve.text.contains(fingerprint))
        #expect(try await pairing.exitCode() == 0, "\(pairing.text)")
        #expect(pairing.text.contains("This machine is now a trusted device of alice"))

        // B now approves a login from a third machine.
        let machineC = try temporaryDirectory("agent-C")
        let (login, loginID, number) = try await broker.startLogin(machine: machineC, name: "machine-C")
        let byB = try broker.agent(
            ["approve", "--event", loginID, "--yes", "--match", number], configDirectory: machineB)
        #expect(try await byB.exitCode() == 0, "\(byB.text)")
        #expect(try await login.exitCode() == 0, "\(login.text)")

        // B lists the devices (itself marked) and removes A.
        let list = try broker.agent(["devices"], configDirectory: machineB)
        #expect(try await list.exitCode() == 0, "\(list.text)")
        #expect(list.text.contains("* desktop-B") && list.text.contains("  laptop-A"))
        let aID = try #require(try CredentialStore(directory: machineA).accounts().first?.deviceID)
        // Ids may start with "-": the id goes after "--", the options before it.
        let remove = try RunningProcess(
            "device-agent",
            [
                "devices", "remove", "--broker", broker.url, "--api-key", broker.apiKeyID, "--user", "alice",
                "--config-dir", machineB.path, "--yes", "--", aID,
            ])
        #expect(try await remove.exitCode() == 0, "\(remove.text)")

        // A's approval of a new login is refused; the login still waits.
        let (second, secondID, secondNumber) = try await broker.startLogin(machine: machineC, name: "machine-C")
        let byA = try broker.agent(
            ["approve", "--event", secondID, "--yes", "--match", secondNumber, "--timeout", "2"],
            configDirectory: machineA)
        #expect(try await byA.exitCode() != 0, "\(byA.text)")
        #expect(byA.text.contains("removed from the account"), "\(byA.text)")
        #expect(byA.text.contains("device-agent login --trust"), "the next step is named: \(byA.text)")
        let pending = try await broker.backend.event(id: secondID)
        #expect(pending.status == .pending)
        second.killNow()

        let statusA = try broker.agent(["status"], configDirectory: machineA)
        #expect(try await statusA.exitCode() == 6, "\(statusA.text)")
        let statusB = try broker.agent(["status"], configDirectory: machineB)
        #expect(try await statusB.exitCode() == 0, "\(statusB.text)")

        // The backend sees every change, and who made it.
        let changes = try await broker.backend.deviceChanges(user: "alice")
        let bID = try #require(try CredentialStore(directory: machineB).accounts().first?.deviceID)
        #expect(changes.map(\.action) == [.revoked, .enrolled, .enrolled])
        #expect(changes[0].deviceID == aID && changes[0].actor == bID)
        #expect(changes[1].deviceID == bID && changes[1].actor == aID)
        #expect(changes[2].actor == ChangeAuthor.enrollmentToken)
    }

    @Test(
        "approve asks a pairing for the code the new device shows: typing it alone approves; anything else is asked again, a wrong code spends a try"
    )
    func pairedByTypingTheCode() async throws {
        let (broker, pairing, eventID, machineA, _) = try await startPairing()
        defer { broker.stop() }
        let code = try await pairing.waitFor(#"Pairing code: (\d{6})"#)
        let fingerprint = try await pairing.waitFor(#"Fingerprint:  ([0-9A-F-]+)"#)
        let approve = try broker.agent(
            ["approve", "--event", eventID], configDirectory: machineA, keepingInputOpen: true)
        defer { approve.stop() }
        _ = try await approve.waitFor(Self.codePrompt)
        #expect(approve.text.contains("Add a new device for alice at demo"), "\(approve.text)")
        #expect(approve.text.contains("device:    desktop-B (cli)"), "\(approve.text)")
        #expect(approve.text.contains("fingerprint: \(fingerprint)\n"), "\(approve.text)")
        #expect(approve.text.contains("Check that this fingerprint matches the one on the new device's screen."))
        #expect(!approve.text.contains("Approve this request") && !approve.text.contains("machine's screen"))

        // "y" is not an answer here: the code is.
        approve.send("y\n")
        _ = try await approve.waitFor(
            #"Type the 6 digits the new device shows; Enter or n refuses, f this wasn't me\."#)
        let wrong = String((Int(String(code.first!))! + 1) % 10) + code.dropFirst()
        approve.send("\(wrong)\n")
        _ = try await approve.waitFor(#"That is not the code the new device shows; 2 tries left\."#)
        approve.send("\(code.prefix(3)) \(code.dropFirst(3))\n")
        #expect(try await approve.exitCode() == 0, "\(approve.text)")
        #expect(approve.text.contains("Approved."), "\(approve.text)")
        #expect(try await pairing.exitCode() == 0, "\(pairing.text)")
        #expect(pairing.text.contains("This machine is now a trusted device of alice"))
        #expect(try await broker.backend.devices(user: "alice").map(\.name).sorted() == ["desktop-B", "laptop-A"])
    }

    @Test("a pairing refused with n at the code prompt: the new machine is told, keeps no key, nothing is added")
    func refusedAtThePrompt() async throws {
        let (broker, pairing, eventID, machineA, machineB) = try await startPairing()
        defer { broker.stop() }
        let approve = try broker.agent(
            ["approve", "--event", eventID], configDirectory: machineA, keepingInputOpen: true)
        defer { approve.stop() }
        _ = try await approve.waitFor(Self.codePrompt)
        approve.send("n\n")
        #expect(try await approve.exitCode() == 0, "\(approve.text)")
        #expect(approve.text.contains("Rejected."), "\(approve.text)")
        #expect(try await pairing.exitCode() == 3, "\(pairing.text)")
        #expect(pairing.text.contains("The pairing was refused."), "\(pairing.text)")
        #expect(try CredentialStore(directory: machineB).accounts().isEmpty)
        #expect(try await broker.backend.event(id: eventID).status == .rejected)
        #expect(try await broker.backend.devices(user: "alice").count == 1)
    }

    @Test("a refused pairing leaves no key on the new machine and no device at the broker")
    func refused() async throws {
        let (broker, pairing, eventID, machineA, machineB) = try await startPairing()
        defer { broker.stop() }
        let reject = try broker.agent(["approve", "--event", eventID, "--reject"], configDirectory: machineA)
        #expect(try await reject.exitCode() == 0, "\(reject.text)")
        #expect(try await pairing.exitCode() == 3, "\(pairing.text)")
        #expect(try CredentialStore(directory: machineB).accounts().isEmpty)
        #expect(try await broker.backend.devices(user: "alice").count == 1)
    }

    @Test("Ctrl-C on the new machine withdraws the pairing and keeps no key: the approver can no longer add it")
    func interrupted() async throws {
        let (broker, pairing, eventID, machineA, machineB) = try await startPairing()
        defer { broker.stop() }
        let code = try await pairing.waitFor(#"Pairing code: (\d{6})"#)
        kill(pairing.process.processIdentifier, SIGINT)
        #expect(try await pairing.exitCode() == 130, "\(pairing.text)")
        #expect(pairing.text.contains("the request is withdrawn"), "\(pairing.text)")
        #expect(try CredentialStore(directory: machineB).accounts().isEmpty, "no key is kept")
        let event = try await broker.backend.event(id: eventID)
        #expect(event.status == .expired && event.statusReason == .withdrawn)
        let late = try broker.agent(
            ["approve", "--event", eventID, "--yes", "--match", code, "--timeout", "3"], configDirectory: machineA)
        #expect(try await late.exitCode() == 6, "said withdrawn at once: \(late.text)")
        #expect(late.text.contains("was withdrawn by the machine that asked"), "\(late.text)")
        #expect(try await broker.backend.devices(user: "alice").count == 1, "nothing was added")
    }
}
