import CountersignClient
import CountersignCore
import Foundation
import Testing

/// The same module in a real sshd (started as a link named after its own
/// PAM service: OpenSSH takes the service name from its program name), for
/// a throwaway local user, logged into by paramiko over keyboard-interactive.
@Suite("end to end: SSH logins through sshd and the PAM module", .serialized)
struct SSHEndToEndTests {
    final class SSHServer {
        let user: String
        let service: PAMEndToEndTests.Service
        var process: RunningProcess!
        var port = 0

        init(broker: LiveBroker, user: String, settings: [String: String] = [:]) async throws {
            self.user = user
            guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd") else {
                throw ProcessFailure("/usr/sbin/sshd is missing: scripts/test.sh installs openssh-server")
            }
            service = try await PAMEndToEndTests.Service(
                broker: broker, settings: settings, stack: ["auth required MODULE", "session required pam_permit.so"])
            try await PAMEndToEndTests.addUser(user)
            try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
            let directory = service.directory
            let hostKey = directory.appendingPathComponent("host_key")
            let keygen = try RunningProcess(
                "/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", hostKey.path])
            guard try await keygen.exitCode(timeout: .seconds(60)) == 0 else { throw ProcessFailure(keygen.text) }
            let config = directory.appendingPathComponent("sshd_config")
            try """
            ListenAddress 127.0.0.1
            HostKey \(hostKey.path)
            PidFile none
            UsePAM yes
            KbdInteractiveAuthentication yes
            PasswordAuthentication no
            PubkeyAuthentication no
            AuthenticationMethods keyboard-interactive
            AllowUsers \(user)
            LoginGraceTime 300
            """.write(to: config, atomically: true, encoding: .utf8)
            let program = directory.appendingPathComponent(service.name)
            try FileManager.default.createSymbolicLink(atPath: program.path, withDestinationPath: "/usr/sbin/sshd")
            for attempt in 1...5 {
                port = try freePort()
                // In a process group of its own (as every RunningProcess):
                // sshd signals its process group.
                process = try RunningProcess(program.path, ["-D", "-e", "-f", config.path, "-p", String(port)])
                do {
                    _ = try await process.waitFor("Server listening on 127.0.0.1 port", timeout: .seconds(60))
                    break
                } catch  where attempt < 5 && process.text.contains("Address already in use") {
                    continue
                }
            }
        }

        func stop() {
            process?.stop()
            PAMEndToEndTests.removeUser(user)
        }

        func login(_ options: [String] = []) throws -> RunningProcess {
            try RunningProcess(
                "/usr/bin/env",
                [
                    "python3", scriptsDirectory.appendingPathComponent("ssh-login.py").path, "127.0.0.1", String(port),
                    user,
                ]
                    + options, keepingInputOpen: true)
        }
    }

    /// A broker with `arguments`, a throwaway user with a trusted machine
    /// (its configuration directory), and an sshd letting that user in
    /// through the module.
    static func setUp(_ arguments: [String], settings: [String: String] = [:]) async throws
        -> (LiveBroker, SSHServer, URL)
    {
        let broker = try await LiveBroker.start(arguments: arguments)
        let user = "cs\(UUID().uuidString.prefix(8).lowercased())"
        do {
            let laptop = try await broker.enrollMachine(user: user, name: "laptop")
            return (broker, try await SSHServer(broker: broker, user: user, settings: settings), laptop)
        } catch {
            broker.stop()
            throw error
        }
    }

    @Test("the number is in sshd's prompt; approved, the session runs; rejected, it is refused")
    func approveAndReject() async throws {
        let (broker, server, laptop) = try await Self.setUp(["--approval-window", "2m"])
        defer {
            server.stop()
            broker.stop()
        }

        let login = try server.login()
        let number = try await login.waitFor(#"prompt: .*number (\d+),"#, timeout: .seconds(120))
        let event = try await PAMEndToEndTests().pending(broker, user: server.user)
        #expect(event.ip == "127.0.0.1" && event.details?.contains("from 127.0.0.1") == true, "\(event)")
        let approve = try broker.agent(
            ["approve", "--event", event.ID, "--yes", "--match", number], configDirectory: laptop, user: server.user)
        #expect(try await approve.exitCode(timeout: .seconds(120)) == 0, "\(approve.text)")
        login.send("\n")
        #expect(try await login.exitCode(timeout: .seconds(120)) == 0, "\(login.text)")
        #expect(login.text.contains("ran: \(server.user)"), "\(login.text)")

        // Refused: told so at a last prompt (sshd would keep a bare message
        // to itself), and the client's retry in the same connection, as
        // OpenSSH's client makes, opens no second request.
        let refused = try server.login(["--retry"])
        _ = try await refused.waitFor(#"prompt: .*number (\d+),"#, timeout: .seconds(120))
        let second = try await PAMEndToEndTests().pending(broker, user: server.user)
        let reject = try broker.agent(
            ["approve", "--event", second.ID, "--reject"], configDirectory: laptop, user: server.user)
        #expect(try await reject.exitCode(timeout: .seconds(120)) == 0, "\(reject.text)")
        refused.send("\n")
        _ = try await refused.waitFor(
            "prompt: Countersign: refused on your device.*Press Enter", timeout: .seconds(120))
        refused.send("\n")
        #expect(try await refused.exitCode(timeout: .seconds(120)) == 1, "\(refused.text)")
        #expect(refused.text.contains("retry denied:") && !refused.text.contains("retry prompt:"), "\(refused.text)")
        #expect(!refused.text.contains("ran:"))
        #expect(try await broker.backend.events(user: server.user).count == 2, "one request for the connection")
    }

    @Test("after_refusal = retry: the client's next try in the same connection gets a new request")
    func retryAfterRefusal() async throws {
        let (broker, server, laptop) = try await Self.setUp(
            ["--approval-window", "2m"], settings: ["after_refusal": "retry"])
        defer {
            server.stop()
            broker.stop()
        }
        let refused = try server.login(["--retry"])
        _ = try await refused.waitFor(#"prompt: .*number (\d+),"#, timeout: .seconds(120))
        let event = try await PAMEndToEndTests().pending(broker, user: server.user)
        let reject = try broker.agent(
            ["approve", "--event", event.ID, "--reject"], configDirectory: laptop, user: server.user)
        #expect(try await reject.exitCode(timeout: .seconds(120)) == 0, "\(reject.text)")
        refused.send("\n")
        _ = try await refused.waitFor("prompt: Countersign: refused on your device", timeout: .seconds(120))
        refused.send("\n")
        _ = try await refused.waitFor(#"retry prompt: .*number (\d+),"#, timeout: .seconds(120))
        #expect(try await refused.exitCode(timeout: .seconds(120)) == 4, "\(refused.text)")
    }

    @Test("a TOTP code typed at sshd's prompt lets the session in once; the same code again is refused")
    func code() async throws {
        let (broker, server, laptop) = try await Self.setUp([])
        defer {
            server.stop()
            broker.stop()
        }
        let user = server.user
        let generate = try broker.agent(["code"], configDirectory: laptop, user: user)
        #expect(try await generate.exitCode(timeout: .seconds(120)) == 0, "\(generate.text)")
        let code = try #require(generate.text.firstMatch(of: /\b(\d{6})\b/)?.1)

        let login = try server.login()
        _ = try await login.waitFor("prompt: .*device-agent code", timeout: .seconds(120))
        login.send("\(code)\n")
        #expect(try await login.exitCode(timeout: .seconds(120)) == 0, "\(login.text)")
        #expect(login.text.contains("ran: \(user)"), "\(login.text)")

        let again = try server.login()
        _ = try await again.waitFor("prompt: .*device-agent code", timeout: .seconds(120))
        again.send("\(code)\n")
        #expect(try await again.exitCode(timeout: .seconds(120)) == 1, "\(again.text)")
        #expect(again.text.contains("denied:") && !again.text.contains("ran:"), "\(again.text)")
    }

    @Test("nobody answers before the window closes: Enter at the second prompt, and sshd refuses")
    func expired() async throws {
        let (broker, server, _) = try await Self.setUp(["--approval-window", "5s"])
        defer {
            server.stop()
            broker.stop()
        }
        let (login, event) = try await unansweredLogin(broker, server)
        login.send("\n")
        #expect(try await login.exitCode(timeout: .seconds(120)) == 1, "\(login.text)")
        #expect(login.text.contains("denied:") && !login.text.contains("ran:"), "\(login.text)")
        #expect(try await broker.backend.event(id: event.ID).status == .expired)
        _ = try await SyslogReceiver.start().waitFor("countersign-pam[", "denied: request \(event.ID) (expired)")
    }

    /// A login whose request nobody answers in its window (Enter at the
    /// number's prompt), at sshd's second prompt, which says so.
    func unansweredLogin(_ broker: LiveBroker, _ server: SSHServer) async throws -> (RunningProcess, EventDocument) {
        let login = try server.login()
        _ = try await login.waitFor(#"prompt: .*number (\d+),"#, timeout: .seconds(120))
        let event = try await PAMEndToEndTests().pending(broker, user: server.user, status: nil)
        login.send("\n")
        _ = try await login.waitFor("prompt: .*no answer came in time", timeout: .seconds(120))
        return (login, event)
    }

    @Test(
        "nobody answers in time, a code at the second prompt: the session runs, and the request reads approved by TOTP")
    func codeAfterExpiry() async throws {
        let (broker, server, laptop) = try await Self.setUp(["--approval-window", "5s"])
        defer {
            server.stop()
            broker.stop()
        }
        let user = server.user
        let (login, event) = try await unansweredLogin(broker, server)
        let generate = try broker.agent(["code"], configDirectory: laptop, user: user)
        #expect(try await generate.exitCode(timeout: .seconds(120)) == 0, "\(generate.text)")
        let code = try #require(generate.text.firstMatch(of: /\b(\d{6})\b/)?.1)
        login.send("\(code)\n")
        #expect(try await login.exitCode(timeout: .seconds(120)) == 0, "\(login.text)")
        #expect(login.text.contains("ran: \(user)"), "\(login.text)")
        let recorded = try await broker.backend.event(id: event.ID)
        #expect(recorded.status == .approved && recorded.method == .totp, "\(recorded)")
    }

    @Test(
        "prompt bombing over SSH: \"this wasn't me\" on one login refuses the next with no new request; the user's code still works"
    )
    func fraudReport() async throws {
        let (broker, server, laptop) = try await Self.setUp(["--approval-window", "2m", "--fraud-protection", "10m"])
        defer {
            server.stop()
            broker.stop()
        }
        let user = server.user
        let bomb = try server.login()
        _ = try await bomb.waitFor(#"prompt: .*number (\d+),"#, timeout: .seconds(120))
        let event = try await PAMEndToEndTests().pending(broker, user: user)
        let report = try broker.agent(
            ["approve", "--event", event.ID, "--report-fraud"], configDirectory: laptop, user: user)
        #expect(try await report.exitCode(timeout: .seconds(120)) == 0, "\(report.text)")
        bomb.send("\n")
        _ = try await bomb.waitFor("prompt: Countersign: reported on your device as not you", timeout: .seconds(120))
        bomb.send("\n")
        #expect(try await bomb.exitCode(timeout: .seconds(120)) == 1, "\(bomb.text)")

        // No request; the prompt says why and takes a code instead.
        let next = try server.login()
        _ = try await next.waitFor(
            "prompt: .*reported a request as not theirs.*device-agent code", timeout: .seconds(120))
        next.send("\n")
        #expect(try await next.exitCode(timeout: .seconds(120)) == 1, "\(next.text)")
        #expect(!next.text.contains("ran:") && !next.text.contains("number"), "\(next.text)")
        #expect(try await broker.backend.events(user: user).count == 1, "no request reached the phone")
        _ = try await SyslogReceiver.start().waitFor("login of \(user)", "denied: no request (user_protected)")

        // The user's own code still lets the user in.
        let generate = try broker.agent(["code"], configDirectory: laptop, user: user)
        #expect(try await generate.exitCode(timeout: .seconds(120)) == 0, "\(generate.text)")
        let code = try #require(generate.text.firstMatch(of: /\b(\d{6})\b/)?.1)
        let own = try server.login()
        _ = try await own.waitFor("prompt: .*reported a request as not theirs", timeout: .seconds(120))
        own.send("\(code)\n")
        #expect(try await own.exitCode(timeout: .seconds(120)) == 0, "\(own.text)")
        #expect(own.text.contains("ran: \(user)"), "\(own.text)")
        // The login the code let in reads approved by TOTP in the app's events.
        let events = try await broker.backend.events(user: user)
        #expect(events.count == 2, "\(events)")
        let recorded = try #require(events.first)
        #expect(recorded.ID != event.ID && recorded.status == .approved && recorded.method == .totp, "\(recorded)")
        #expect(recorded.decidedBy != nil && recorded.details?.contains("as \(user) on") == true, "\(recorded)")
        _ = try await SyslogReceiver.start().waitFor("login of \(user)", "recorded as \(recorded.ID)")
    }

    @Test("the client dropping the connection at the prompt withdraws the request; nobody is let in")
    func disconnected() async throws {
        let (broker, server, _) = try await Self.setUp(["--approval-window", "2m"])
        defer {
            server.stop()
            broker.stop()
        }
        let user = server.user
        let login = try server.login(["--disconnect-at-prompt"])
        #expect(try await login.exitCode(timeout: .seconds(120)) == 3, "\(login.text)")
        #expect(login.text.contains("prompt: ") && !login.text.contains("ran:"))
        // The one request of this attempt, withdrawn (perhaps at once).
        var events: [EventDocument] = []
        for _ in 0..<600 {
            events = try await broker.backend.events(user: user)
            if events.first?.statusReason == .withdrawn { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(events.count == 1 && events.first?.statusReason == .withdrawn, "\(events)")
    }

    @Test(
        "the client dropping the connection after Enter: sshd does not tell the module; the request stays approvable, and its approval lets nobody in"
    )
    func disconnectedAfterEnter() async throws {
        let (broker, server, laptop) = try await Self.setUp(["--approval-window", "2m"])
        defer {
            server.stop()
            broker.stop()
        }
        let user = server.user
        let login = try server.login(["--disconnect-after-answer"])
        let number = try await login.waitFor(#"prompt: .*number (\d+),"#, timeout: .seconds(120))
        login.send("\n")
        #expect(try await login.exitCode(timeout: .seconds(120)) == 3, "\(login.text)")
        // sshd's network process sees the connection go; its monitor, waiting
        // for the module, neither tells it nor says so until it returns.
        let event = try await PAMEndToEndTests().pending(broker, user: user)
        #expect(!server.process.text.contains("Connection closed"), "\(server.process.text)")
        let approve = try broker.agent(
            ["approve", "--event", event.ID, "--yes", "--match", number], configDirectory: laptop, user: user)
        #expect(try await approve.exitCode(timeout: .seconds(120)) == 0, "\(approve.text)")
        _ = try await SyslogReceiver.start().waitFor("login of \(user)", "request \(event.ID) approved by device")
        // The module lets the login in; sshd has no connection left to open
        // a session on, and says the client went away.
        _ = try await server.process.waitFor("Connection closed by authenticating user \(user)", timeout: .seconds(60))
        #expect(!server.process.text.contains("Accepted"), "\(server.process.text)")
        #expect(try await broker.backend.event(id: event.ID).status == .approved)
    }
}
