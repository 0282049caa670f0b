import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Foundation
import NIOCore
import Testing

/// What a new user meets with the agent, from the first command to a daily
/// approver: real broker, real agents, terminals driven through a
/// pseudo-terminal and read back through a terminal emulator.
@Suite("end to end: the first hour with the agent")
struct FirstHourEndToEndTests {
    /// `device-agent` with only a config directory: no broker, API key or user.
    func bare(_ arguments: [String], _ directory: URL, stdin: String? = nil) throws -> RunningProcess {
        try RunningProcess("device-agent", arguments + ["--config-dir", directory.path], stdin: stdin)
    }

    /// Runs the agent in a pseudo-terminal through scripts/terminal-screen.py.
    func terminal(_ arguments: [String], answers: [(String, String)] = [], watch: [String] = []) throws
        -> RunningProcess
    {
        var script = ["python3", scriptsDirectory.appendingPathComponent("terminal-screen.py").path]
        for (prompt, reply) in answers { script += ["--answer", prompt, reply] }
        for pattern in watch { script += ["--watch", pattern] }
        let agent = Binaries.directory.appendingPathComponent("device-agent").path
        return try RunningProcess("/usr/bin/env", script + ["--", agent] + arguments)
    }

    func screen(of run: RunningProcess) throws -> String {
        try #require(run.text.firstMatch(of: /--- screen ---\n((?s).*)\n--- end ---/)).output.1.description
    }

    @Test("after enroll the machine knows its broker, app and user; with two accounts it asks which")
    func remembers() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machine = try await broker.enrollMachine(name: "laptop-A")

        let devices = try bare(["devices"], machine)
        #expect(try await devices.exitCode() == 0, "\(devices.text)")
        #expect(devices.text.contains("Devices of alice at \(broker.url)"), "\(devices.text)")
        let login = try bare(["login"], machine)
        #expect(try await login.exitCode() == 0, "\(login.text)")
        #expect(login.text.contains("This machine is a trusted device of alice: approved."), "\(login.text)")
        let approve = try bare(["approve", "--timeout", "0"], machine)
        #expect(try await approve.exitCode() == 5, "nothing waits: \(approve.text)")
        #expect(approve.text.contains("Waiting for requests for alice on \(broker.url)"), "\(approve.text)")

        // A second account in the same directory: the agent no longer guesses.
        let token = try await broker.backend.createEnrollmentToken(user: "bob").token
        let enrollBob = try broker.agent(["enroll", "--token", token], configDirectory: machine, user: "bob")
        #expect(try await enrollBob.exitCode() == 0, "\(enrollBob.text)")
        let which = try bare(["devices"], machine)
        #expect(try await which.exitCode() == 1)
        #expect(which.text.contains("several accounts: "), "\(which.text)")
        #expect(which.text.contains("alice (app") && which.text.contains("bob (app"), "\(which.text)")
        #expect(which.text.contains("--user"), "\(which.text)")
        let bob = try bare(["devices", "--user", "bob"], machine)
        #expect(try await bob.exitCode() == 0, "\(bob.text)")
        #expect(bob.text.contains("Devices of bob"), "\(bob.text)")
        let asked = try terminal(
            ["devices", "--config-dir", machine.path], answers: [("Which one? [1-2]", "x"), ("Which one? [1-2]", "2")])
        #expect(try await asked.exitCode() == 0, "\(asked.text)")
        let shownScreen = try screen(of: asked)
        #expect(shownScreen.contains("Type a number from 1 to 2."), "\(shownScreen)")
        #expect(shownScreen.contains("Devices of "), "\(shownScreen)")

        // A machine that is not enrolled, or a forgotten --config-dir, names
        // the directory it looked in.
        let empty = try temporaryDirectory("nothing-here")
        let lost = try bare(["login"], empty)
        #expect(try await lost.exitCode() == 64)
        #expect(lost.text.contains("give --broker URL, --api-key ID, --user ID"), "\(lost.text)")
        #expect(lost.text.contains(empty.path), "\(lost.text)")
        let notTrusted = try bare(["devices", "--user", "carol"], machine)
        #expect(try await notTrusted.exitCode() == 1)
        #expect(notTrusted.text.contains("not a trusted device of carol"), "\(notTrusted.text)")
        #expect(notTrusted.text.contains(machine.path), "\(notTrusted.text)")
    }

    @Test("Ctrl-C and SIGTERM during login withdraw the request: no trusted device can approve it afterwards")
    func interruptedLoginWithdraws() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        for (signal, status) in [(SIGINT, Int32(130)), (SIGTERM, Int32(143))] {
            let (login, eventID, number) = try await broker.startLogin(machine: try temporaryDirectory("agent-B"))
            kill(login.process.processIdentifier, signal)
            #expect(try await login.exitCode() == status, "\(login.text)")
            #expect(login.text.contains("the request is withdrawn; no trusted device can approve it now"))
            let event = try await broker.backend.event(id: eventID)
            #expect(event.status == .expired && event.statusReason == .withdrawn, "\(event)")
            let late = try broker.agent(
                ["approve", "--event", eventID, "--yes", "--match", number, "--timeout", "3"], configDirectory: machineA
            )
            #expect(try await late.exitCode() == 6, "the approver is told it was withdrawn: \(late.text)")
            #expect(late.text.contains("was withdrawn by the machine that asked"), "\(late.text)")
        }
        // The pending limit is free again: a new login is taken at once.
        let (login, _, _) = try await broker.startLogin(machine: try temporaryDirectory("agent-C"))
        login.stop()
    }

    @Test("a refused code withdraws the request it was typed for")
    func refusedCodeWithdraws() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        _ = try await broker.enrollMachine(name: "laptop-A")
        let login = try broker.agent(["login", "--code", "000000"], configDirectory: try temporaryDirectory("agent-B"))
        #expect(try await login.exitCode() == 5, "\(login.text)")
        #expect(login.text.contains("The code was refused"), "\(login.text)")
        #expect(login.text.contains("the request is withdrawn"), "\(login.text)")
        let events = try await broker.backend.events(user: "alice")
        #expect(events.count == 1 && events[0].statusReason == .withdrawn, "\(events)")
    }

    @Test("login --code on a broker without TOTP says what its operator must do, and withdraws its request")
    func codeWithoutTOTP() async throws {
        let broker = try await LiveBroker.start(totp: false)
        defer { broker.stop() }
        _ = try await broker.enrollMachine(name: "laptop-A")
        let login = try broker.agent(["login", "--code", "123456"], configDirectory: try temporaryDirectory("agent-B"))
        #expect(try await login.exitCode() == 1, "\(login.text)")
        #expect(login.text.contains("device-broker serve --totp-key-file"), "\(login.text)")
        #expect(login.text.contains("the request is withdrawn"), "\(login.text)")
        let events = try await broker.backend.events(user: "alice")
        #expect(events.count == 1 && events[0].statusReason == .withdrawn, "nobody is asked: \(events)")
    }

    @Test("at the match prompt, what is not a number is asked again; three wrong numbers are told to the requester")
    func matchPrompt() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let (login, _, number) = try await broker.startLogin(machine: try temporaryDirectory("agent-B"))
        let approve = try broker.agent(["approve"], configDirectory: machineA, stdin: "y\nabc\n4\n00\n\(number)\n")
        #expect(try await approve.exitCode() == 0, "\(approve.text)")
        #expect(approve.text.components(separatedBy: "Type the 2 digits").count == 3, "\(approve.text)")
        #expect(approve.text.contains("2 tries left"), "only the wrong number spent a try: \(approve.text)")
        #expect(try await login.exitCode() == 0, "\(login.text)")

        let (second, _, right) = try await broker.startLogin(machine: try temporaryDirectory("agent-C"))
        let wrong = right == "10" ? "11" : "10"
        let rejecting = try broker.agent(
            ["approve"], configDirectory: machineA, stdin: "y\n\(wrong)\n\(wrong)\n\(wrong)\n")
        #expect(try await rejecting.exitCode() == 0, "\(rejecting.text)")
        #expect(rejecting.text.contains("that was the third wrong number"), "\(rejecting.text)")
        #expect(try await second.exitCode() == 3, "\(second.text)")
        #expect(second.text.contains("a wrong number was typed three times"), "\(second.text)")
    }

    @Test("on a terminal the approver counts down, lists waiting requests newest last, and drops a withdrawn one")
    func approverTerminal() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let (first, _, _) = try await broker.startLogin(machine: try temporaryDirectory("agent-B"), name: "older-pc")
        let (second, _, _) = try await broker.startLogin(machine: try temporaryDirectory("agent-C"), name: "newer-pc")
        let approve = try terminal(
            ["approve", "--timeout", "5", "--config-dir", machineA.path],
            answers: [("Which one?", "1")], watch: [#"time left: \d+ s"#, "This request is gone"])
        // Two different values of the countdown, then the requester gives up.
        _ = try await approve.waitFor(
            #"--- seen: time left: \d+ s\n(?s:.*)--- seen: time left: \d+ s"#, timeout: .seconds(60))
        kill(first.process.processIdentifier, SIGINT)
        #expect(try await first.exitCode() == 130, "\(first.text)")
        // The other one goes too, and the approver waits out its timeout.
        _ = try await approve.waitFor("--- seen: This request is gone", timeout: .seconds(60))
        kill(second.process.processIdentifier, SIGINT)
        #expect(try await second.exitCode() == 130, "\(second.text)")
        #expect(try await approve.exitCode(timeout: .seconds(120)) == 5, "\(approve.text)")
        let shownScreen = try screen(of: approve)
        print("the approver's screen:\n\(shownScreen)")
        let lines = shownScreen.split(separator: "\n").map(String.init)
        let listed = lines.filter { $0.hasPrefix("  1) ") || $0.hasPrefix("  2) ") }
        #expect(listed.count == 2 && listed[0].contains("older-pc") && listed[1].contains("newer-pc"), "\(shownScreen)")
        #expect(listed.allSatisfy { $0.contains(" s left") }, "\(shownScreen)")
        #expect(shownScreen.contains("Log-in request for alice at demo"), "\(shownScreen)")
        #expect(shownScreen.contains("This request is gone: the requesting machine withdrew it"), "\(shownScreen)")
    }

    @Test("approve --watch rides out a broker restart and shows the next request")
    func watchReconnects() async throws {
        var broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let watch = try broker.agent(["approve", "--watch"], configDirectory: machineA)
        _ = try await watch.waitFor("Waiting for requests for alice")
        try await broker.waitUntilHolding(1)
        broker = try await broker.restart(after: .seconds(2))
        _ = try await watch.waitFor("Reconnected to the broker", timeout: .seconds(90))
        #expect(watch.text.contains("Lost the broker"), "\(watch.text)")
        let (login, _, _) = try await broker.startLogin(machine: try temporaryDirectory("agent-B"))
        _ = try await watch.waitFor("Log-in request for alice", timeout: .seconds(60))
        watch.stop()
        login.stop()
    }

    @Test(
        "devices remove takes a unique name, asks on a terminal, wants --yes elsewhere, and says when it is this machine"
    )
    func removeByName() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        _ = try await broker.enrollDevice(name: "old-phone")
        _ = try await broker.enrollDevice(name: "twin")
        _ = try await broker.enrollDevice(name: "twin")

        let unasked = try bare(["devices", "remove", "old-phone"], machineA)
        #expect(try await unasked.exitCode() == 64, "\(unasked.text)")
        #expect(unasked.text.contains("give --yes"), "\(unasked.text)")
        let ambiguous = try bare(["devices", "remove", "twin", "--yes"], machineA)
        #expect(try await ambiguous.exitCode() == 1)
        #expect(ambiguous.text.contains("2 devices are named twin; give the id of one"), "\(ambiguous.text)")
        let unknown = try bare(["devices", "remove", "tablet", "--yes"], machineA)
        #expect(try await unknown.exitCode() == 1)
        #expect(unknown.text.contains("no trusted device is named or has the id tablet"), "\(unknown.text)")

        let declined = try terminal(
            ["devices", "remove", "old-phone", "--config-dir", machineA.path],
            answers: [("trusted devices? [y/N]", "n")])
        #expect(try await declined.exitCode() == 0, "\(declined.text)")
        #expect(try screen(of: declined).contains("Nothing was removed."))
        #expect(try await broker.backend.devices(user: "alice").filter { $0.revokedAt == nil }.count == 4)
        let confirmed = try terminal(
            ["devices", "remove", "old-phone", "--config-dir", machineA.path],
            answers: [("trusted devices? [y/N]", "y")])
        #expect(try await confirmed.exitCode() == 0, "\(confirmed.text)")
        #expect(try screen(of: confirmed).contains("Removed old-phone: it can no longer approve anything."))

        let itself = try bare(["devices", "remove", "laptop-A", "--yes"], machineA)
        #expect(try await itself.exitCode() == 0, "\(itself.text)")
        #expect(itself.text.contains("That was this machine: it is no longer a trusted device"), "\(itself.text)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: machineA.path).isEmpty)
    }

    @Test("recovery-codes asks before replacing a set that still has unused codes")
    func recoveryCodesAsk() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let first = try bare(["recovery-codes"], machineA)
        #expect(try await first.exitCode() == 0, "the first set needs no confirmation: \(first.text)")
        let unasked = try bare(["recovery-codes"], machineA)
        #expect(try await unasked.exitCode() == 64)
        #expect(unasked.text.contains("recovery codes are still unused; give --yes"), "\(unasked.text)")
        let declined = try terminal(
            ["recovery-codes", "--config-dir", machineA.path], answers: [("Replace them with a new set? [y/N]", "")])
        #expect(try await declined.exitCode() == 0)
        #expect(try screen(of: declined).contains("The recovery codes are unchanged."))
        let codes = { (text: String) in text.matches(of: /\n  (\S+)/).map { String($0.output.1) } }
        let replaced = try bare(["recovery-codes", "--yes"], machineA)
        #expect(try await replaced.exitCode() == 0)
        #expect(Set(codes(replaced.text)).isDisjoint(with: codes(first.text)) && !codes(replaced.text).isEmpty)
    }

    @Test("network failures in words, at once: refused, no scheme, TLS against plain HTTP")
    func networkErrors() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let closed = try freePort()
        let machine = try temporaryDirectory("agent-B")
        let refused = try RunningProcess(
            "device-agent",
            [
                "login", "--broker", "http://127.0.0.1:\(closed)", "--api-key", "ck_x", "--user", "alice",
                "--config-dir", machine.path,
            ])
        #expect(try await refused.exitCode() == 1)
        // A refused connection is named as one: not a timeout after silent
        // retries, which is what this replaced.
        #expect(
            refused.text.contains(
                "cannot reach the broker at http://127.0.0.1:\(closed): connection refused (is it running?)"),
            "\(refused.text)")
        let schemeless = try RunningProcess(
            "device-agent",
            [
                "login", "--broker", "127.0.0.1:\(closed)", "--api-key", "ck_x", "--user", "alice", "--config-dir",
                machine.path,
            ])
        #expect(try await schemeless.exitCode() == 64)
        #expect(schemeless.text.contains("e.g. http://127.0.0.1:\(closed)"), "\(schemeless.text)")
        let port = try #require(URLComponents(string: broker.url)?.port)
        let tls = try RunningProcess(
            "device-agent",
            [
                "login", "--broker", "https://127.0.0.1:\(port)", "--api-key", broker.apiKeyID, "--user", "alice",
                "--config-dir", machine.path,
            ])
        #expect(try await tls.exitCode() == 1)
        #expect(tls.text.contains("does not speak TLS there; if it serves plain HTTP, use http://"), "\(tls.text)")
        for run in [refused, schemeless, tls] {
            #expect(!run.text.contains("Error Domain") && !run.text.contains("NIO") && !run.text.contains("errno"))
            #expect(!run.text.contains(".swift"), "\(run.text)")
        }
    }

    @Test("a mistyped command is named with the nearest one, not the first option after it")
    func mistypedCommand() async throws {
        let typo = try RunningProcess("device-agent", ["aprove", "--config-dir", "/nonexistent"])
        #expect(try await typo.exitCode() == 64, "\(typo.text)")
        #expect(typo.text.contains("there is no command 'aprove'; did you mean 'approve'?"), "\(typo.text)")
        let far = try RunningProcess("device-agent", ["frobnicate-everything"])
        #expect(try await far.exitCode() == 64, "\(far.text)")
        #expect(!far.text.contains("did you mean"), "nothing near it: \(far.text)")
    }

    @Test("--version on both commands, in the agent's User-Agent, in /healthz and in a build-info metric")
    func versions() async throws {
        for command in ["device-agent", "device-broker"] {
            let run = try RunningProcess(command, ["--version"])
            #expect(try await run.exitCode() == 0)
            #expect(run.text.trimmingCharacters(in: .whitespacesAndNewlines) == CountersignVersion.current)
            // The completion script the README tells people to install.
            let completion = try RunningProcess(command, ["--generate-completion-script", "bash"])
            #expect(try await completion.exitCode() == 0)
            #expect(
                completion.text.hasPrefix("#!/bin/bash") && completion.text.contains("__\(command)_"),
                "\(completion.text.prefix(300))")
        }
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let health = try await HTTPClient.shared.get(url: broker.url + "/healthz").get()
        #expect(String(buffer: health.body ?? ByteBuffer()).contains(#""version":"\#(CountersignVersion.current)""#))
        let metrics = try await HTTPClient.shared.get(url: broker.url + "/metrics").get()
        #expect(
            String(buffer: metrics.body ?? ByteBuffer()).contains(
                #"countersign_build_info{version="\#(CountersignVersion.current)"} 1"#))

        // What the agent sends, as a listening socket receives it.
        let listener = try RawListener()
        let login = try RunningProcess(
            "device-agent",
            [
                "login", "--broker", "http://127.0.0.1:\(listener.port)", "--api-key", "ck_x", "--user", "alice",
                "--config-dir", try temporaryDirectory("agent-ua").path,
            ])
        let head = try await listener.firstRequestHead()
        login.stop()
        #expect(head.contains("User-Agent: device-agent/\(CountersignVersion.current)\r\n"), "\(head)")
    }

    @Test("every script in scripts/ answers --help without a traceback, and does nothing else")
    func scriptsHelp() async throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: scriptsDirectory.path).filter {
            $0.hasSuffix(".py")
        }
        #expect(!names.isEmpty)
        // Asking for help writes nothing: not the contract's vectors, say.
        let proto = scriptsDirectory.deletingLastPathComponent().appendingPathComponent("proto")
        func contents() throws -> [String: Data] {
            var files: [String: Data] = [:]
            let walker = FileManager.default.enumerator(at: proto, includingPropertiesForKeys: nil)
            while let url = walker?.nextObject() as? URL {
                if let data = try? Data(contentsOf: url) { files[url.path] = data }
            }
            return files
        }
        let before = try contents()
        defer { #expect((try? contents()) == before, "a script changed proto/ when asked for --help") }
        for name in names {
            let run = try RunningProcess(
                "/usr/bin/env", ["python3", scriptsDirectory.appendingPathComponent(name).path, "--help"])
            #expect(try await run.exitCode() == 0, "\(name): \(run.text)")
            #expect(!run.text.contains("Traceback"), "\(name): \(run.text)")
        }
    }
}
