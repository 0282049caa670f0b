import CountersignClient
import CountersignCore
import Foundation
import Testing

/// pam_countersign.so, built with the system compiler, loaded by Debian's
/// pamtester through a real PAM stack, running the real helper against a
/// real broker; the user answers at pamtester's prompt.
@Suite("end to end: the PAM module through pamtester", .serialized)
struct PAMEndToEndTests {
    /// A PAM service using the module, and the helper's configuration.
    final class Service {
        let name = "countersign-test-\(UUID().uuidString.prefix(8).lowercased())"
        let directory: URL
        let config: URL

        init(
            broker: LiveBroker, settings: [String: String] = [:], stack: [String]? = nil, helper: String? = nil,
            timeout: Int = 200
        ) async throws {
            // Loud, never silent: these tests need root (a PAM service file)
            // and the tools the test script installs.
            guard getuid() == 0 else { throw ProcessFailure("the PAM tests need root to write /etc/pam.d") }
            for tool in ["/usr/bin/pamtester", "/usr/include/security/pam_modules.h"] {
                guard FileManager.default.fileExists(atPath: tool) else {
                    throw ProcessFailure("\(tool) is missing: scripts/test.sh installs pamtester and libpam0g-dev")
                }
            }
            // Before the first login: the helper's first line would be lost.
            _ = try SyslogReceiver.start()
            directory = try temporaryDirectory("pam")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let module = directory.appendingPathComponent("pam_countersign.so")
            let make = try RunningProcess(
                "/usr/bin/make",
                [
                    "-C", scriptsDirectory.deletingLastPathComponent().appendingPathComponent("deploy/pam").path,
                    "OUT=\(module.path)",
                ])
            guard try await make.exitCode(timeout: .seconds(120)) == 0 else {
                throw ProcessFailure("building the module failed:\n\(make.text)")
            }
            config = directory.appendingPathComponent("pam.conf")
            var values = [
                "broker": broker.url, "api_key_id": broker.apiKeyID, "api_secret_key": broker.apiSecret,
            ]
            values.merge(settings) { $1 }
            try values.map { "\($0.key) = \($0.value)" }.sorted().joined(separator: "\n").write(
                to: config, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: config.path)
            let line =
                "\(module.path) helper=\(helper ?? Binaries.directory.appendingPathComponent("device-agent").path) "
                + "config=\(config.path) timeout=\(timeout)"
            let lines = (stack ?? ["auth required \(line)"]).map { $0.replacingOccurrences(of: "MODULE", with: line) }
            try (lines + ["account required pam_permit.so", ""]).joined(separator: "\n").write(
                toFile: "/etc/pam.d/\(name)", atomically: true, encoding: .utf8)
        }

        deinit { try? FileManager.default.removeItem(atPath: "/etc/pam.d/\(name)") }

        /// pamtester authenticating `user` with this service, from `rhost` if given.
        func authenticate(_ user: String, rhost: String? = nil) throws -> RunningProcess {
            try RunningProcess(
                "/usr/bin/pamtester",
                ["-v"] + (rhost.map { ["-I", "rhost=\($0)"] } ?? []) + [name, user, "authenticate"],
                keepingInputOpen: true)
        }
    }

    /// A throwaway local user, with no home and no password.
    static func addUser(_ user: String) async throws {
        let add = try RunningProcess("/usr/sbin/useradd", ["-M", "-d", "/", "-s", "/bin/sh", user])
        guard try await add.exitCode(timeout: .seconds(60)) == 0 else {
            throw ProcessFailure("useradd failed (these tests need root):\n\(add.text)")
        }
    }

    static func removeUser(_ user: String) {
        let remove = try? RunningProcess("/usr/sbin/userdel", [user])
        remove?.process.waitUntilExit()
    }

    /// The pending request the helper made for `user` (with `status` nil,
    /// its latest request whatever its state: a short window may end first).
    func pending(_ broker: LiveBroker, user: String = "alice", status: EventStatus? = .pending) async throws
        -> EventDocument
    {
        for _ in 0..<600 {
            if let event = try await broker.backend.events(user: user, status: status).first { return event }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ProcessFailure("no pending request for \(user)")
    }

    @Test("approved on the trusted device with the number from the prompt: let in; rejected: refused")
    func approveAndReject() async throws {
        let broker = try await LiveBroker.start(arguments: ["--approval-window", "2m"])
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let service = try await Service(broker: broker)

        let login = try service.authenticate("alice")
        let number = try await login.waitFor(#"number (\d+),"#, timeout: .seconds(120))
        let event = try await pending(broker)
        #expect(event.details?.contains("as alice on") == true, "\(event.details ?? "")")
        #expect(event.requesterName?.hasSuffix("(\(service.name))") == true)
        let approve = try broker.agent(
            ["approve", "--event", event.ID, "--yes", "--match", number], configDirectory: laptop)
        #expect(try await approve.exitCode(timeout: .seconds(120)) == 0, "\(approve.text)")
        login.send("\n")
        #expect(try await login.exitCode(timeout: .seconds(120)) == 0, "\(login.text)")
        #expect(login.text.contains("successfully authenticated"))
        // In the authentication log, with the event id: the helper's line
        // and the module's own.
        let log = try SyslogReceiver.start()
        let approved = try await log.waitFor("countersign-pam[", "request \(event.ID) approved by device")
        #expect(SyslogReceiver.facility(of: approved) == 10, "authpriv: \(approved)")
        let allowed = try await log.waitFor("(\(service.name):auth)", "alice allowed: request \(event.ID)")
        #expect(SyslogReceiver.facility(of: allowed) == 10, "authpriv: \(allowed)")

        let refused = try service.authenticate("alice")
        _ = try await refused.waitFor(#"number (\d+),"#, timeout: .seconds(120))
        let second = try await pending(broker)
        let reject = try broker.agent(["approve", "--event", second.ID, "--reject"], configDirectory: laptop)
        #expect(try await reject.exitCode(timeout: .seconds(120)) == 0, "\(reject.text)")
        refused.send("\n")
        #expect(try await refused.exitCode(timeout: .seconds(120)) != 0, "\(refused.text)")
        #expect(refused.text.contains("rejected"))
        _ = try await log.waitFor("countersign-pam[", "request \(second.ID) rejected")
        #expect(try await broker.backend.events(user: "alice").count == 2, "one request per attempt")
    }

    @Test("a TOTP code typed at the prompt lets in once; the same code again is refused")
    func code() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let service = try await Service(broker: broker)
        let generate = try broker.agent(["code"], configDirectory: laptop)
        #expect(try await generate.exitCode(timeout: .seconds(120)) == 0, "\(generate.text)")
        let code = try #require(generate.text.firstMatch(of: /\b(\d{6})\b/)?.1)

        let login = try service.authenticate("alice")
        _ = try await login.waitFor("device-agent code", timeout: .seconds(120))
        login.send("\(code)\n")
        #expect(try await login.exitCode(timeout: .seconds(120)) == 0, "\(login.text)")

        let again = try service.authenticate("alice")
        _ = try await again.waitFor("device-agent code", timeout: .seconds(120))
        again.send("\(code)\n")
        #expect(try await again.exitCode(timeout: .seconds(120)) != 0, "\(again.text)")
        #expect(again.text.contains("not valid"))
    }

    @Test("no answer before the window closes: the second prompt takes a code, and the expired request stays expired")
    func codeAfterExpiry() async throws {
        let broker = try await LiveBroker.start(arguments: ["--approval-window", "5s"])
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let service = try await Service(broker: broker)
        let login = try service.authenticate("alice")
        _ = try await login.waitFor(#"number (\d+),"#, timeout: .seconds(120))
        let event = try await pending(broker, status: nil)
        login.send("\n")
        _ = try await login.waitFor("no answer came in time", timeout: .seconds(120))
        let generate = try broker.agent(["code"], configDirectory: laptop)
        #expect(try await generate.exitCode(timeout: .seconds(120)) == 0, "\(generate.text)")
        let code = try #require(generate.text.firstMatch(of: /\b(\d{6})\b/)?.1)
        login.send("\(code)\n")
        #expect(try await login.exitCode(timeout: .seconds(120)) == 0, "\(login.text)")
        #expect(try await broker.backend.event(id: event.ID).status == .expired)
    }

    @Test("broker unreachable: refused in secure mode, let in in safe mode; not enrolled: refused, or skipped")
    func failModes() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        _ = try await broker.enrollMachine(name: "laptop")
        let down = "http://127.0.0.1:\(try freePort())"

        let secure = try await Service(broker: broker, settings: ["broker": down])
        let refused = try secure.authenticate("alice")
        #expect(try await refused.exitCode(timeout: .seconds(120)) != 0, "\(refused.text)")
        #expect(refused.text.contains("cannot be reached"))
        let log = try SyslogReceiver.start()
        _ = try await log.waitFor("\(secure.name) login of alice", "denied:", "(fail_mode secure)")

        let safe = try await Service(broker: broker, settings: ["broker": down, "fail_mode": "safe"])
        let allowed = try safe.authenticate("alice")
        #expect(try await allowed.exitCode(timeout: .seconds(120)) == 0, "\(allowed.text)")
        _ = try await log.waitFor("\(safe.name) login of alice", "ALLOWED WITHOUT APPROVAL", "(fail_mode safe)")

        // A broker that answers is not down: safe mode refuses its 503 (here
        // a broker at its connection limit, which anyone can bring about).
        let full = try await LiveBroker.start(arguments: ["--max-connections", "1"])
        defer { full.stop() }
        let holder = try RawConnection(port: full.port, from: "127.0.0.1")
        holder.send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        _ = holder.readResponse()
        let loaded = try await Service(broker: full, settings: ["fail_mode": "safe"])
        let refusedWhenFull = try loaded.authenticate("alice")
        #expect(try await refusedWhenFull.exitCode(timeout: .seconds(120)) != 0, "\(refusedWhenFull.text)")
        _ = try await log.waitFor("\(loaded.name) login of alice", "denied: the broker answered 503")
        withExtendedLifetime(holder) {}

        let strict = try await Service(broker: broker)
        let stranger = try strict.authenticate("bob")
        #expect(try await stranger.exitCode(timeout: .seconds(120)) != 0, "\(stranger.text)")
        #expect(stranger.text.contains("no trusted device"))

        // A helper that dies, or ends without a verdict, or says something
        // else than the protocol, never lets anyone in.
        for helper in ["/bin/false", "/bin/true", "/usr/bin/yes", "/nonexistent/helper"] {
            let broken = try await Service(broker: broker, helper: helper)
            let attempt = try broken.authenticate("alice")
            #expect(try await attempt.exitCode(timeout: .seconds(120)) != 0, "\(helper): \(attempt.text)")
        }

        // Skipped: the next module decides (here, one that lets everyone in).
        let skipping = try await Service(
            broker: broker, settings: ["unenrolled": "skip"],
            stack: ["auth [success=done ignore=ignore default=die] MODULE", "auth required pam_permit.so"])
        let skipped = try skipping.authenticate("bob")
        #expect(try await skipped.exitCode(timeout: .seconds(120)) == 0, "\(skipped.text)")
    }

    @Test("a link-local address with its zone, or a host name, still counts as the client's address")
    func remoteHosts() async throws {
        let broker = try await LiveBroker.start(arguments: ["--fraud-protection", "10m"])
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let service = try await Service(broker: broker)
        for (rhost, address) in [("fe80::a7:1%lo", "fe80::a7:1"), ("localhost", "127.0.0.1")] {
            let login = try service.authenticate("alice", rhost: rhost)
            _ = try await login.waitFor(#"number (\d+),"#, timeout: .seconds(120))
            let event = try await pending(broker)
            login.killNow()
            #expect(event.ip == address || (rhost == "localhost" && event.ip == "::1"), "\(rhost): \(event)")
            for _ in 0..<600 where try await broker.backend.event(id: event.ID).status == .pending {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        // Counted as a client's: after "this wasn't me", a login from such a
        // host gets no request either.
        let bomb = try service.authenticate("alice", rhost: "fe80::a7:2%lo")
        _ = try await bomb.waitFor(#"number (\d+),"#, timeout: .seconds(120))
        let event = try await pending(broker)
        let report = try broker.agent(["approve", "--event", event.ID, "--report-fraud"], configDirectory: laptop)
        #expect(try await report.exitCode(timeout: .seconds(120)) == 0, "\(report.text)")
        bomb.killNow()
        let next = try service.authenticate("alice", rhost: "localhost")
        _ = try await next.waitFor("reported a request as not theirs", timeout: .seconds(120))
        next.killNow()
        #expect(try await broker.backend.events(user: "alice").count == 3, "no request for the last login")
    }

    @Test("a program that calls itself sudo is not shown as sudo: the module asks the file it runs")
    func notSudo() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        _ = try await broker.enrollMachine(name: "laptop")
        let service = try await Service(broker: broker)
        let login = try RunningProcess(
            "/bin/bash", ["-c", "exec -a sudo /usr/bin/pamtester -v \(service.name) alice authenticate"],
            keepingInputOpen: true)
        _ = try await login.waitFor(#"number (\d+),"#, timeout: .seconds(120))
        let event = try await pending(broker)
        login.killNow()
        #expect(event.details?.hasPrefix("\(service.name) as alice on") == true, "\(event.details ?? "")")
        #expect(event.details?.contains("sudo") == false, "\(event.details ?? "")")
    }

    @Test("a helper silent past the module's timeout is killed and the login refused, said in the log")
    func silentHelper() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let directory = try temporaryDirectory("silent-helper")
        let pidFile = directory.appendingPathComponent("pid")
        let helper = directory.appendingPathComponent("helper")
        try "#!/bin/sh\necho $$ > \(pidFile.path)\nexec sleep 600\n".write(
            to: helper, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: helper.path)
        let service = try await Service(broker: broker, helper: helper.path, timeout: 2)

        let attempt = try service.authenticate("alice")
        #expect(try await attempt.exitCode(timeout: .seconds(120)) != 0, "\(attempt.text)")
        #expect(!attempt.text.contains("successfully authenticated"))
        let pid = try #require(
            Int32(String(contentsOf: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "the silent helper is gone (killed and reaped)")
        _ = try await SyslogReceiver.start().waitFor(
            "(\(service.name):auth)", "the helper ended without a verdict for alice; denied")
    }

    @Test("the login going away at the prompt withdraws the request and lets nobody in; a bad config refuses")
    func abandoned() async throws {
        let broker = try await LiveBroker.start(arguments: ["--approval-window", "2m"])
        defer { broker.stop() }
        _ = try await broker.enrollMachine(name: "laptop")
        let service = try await Service(broker: broker)
        let login = try service.authenticate("alice")
        _ = try await login.waitFor(#"number (\d+),"#, timeout: .seconds(120))
        let event = try await pending(broker)
        login.killNow()
        var withdrawn = false
        for _ in 0..<600 where !withdrawn {
            withdrawn = try await broker.backend.event(id: event.ID).statusReason == .withdrawn
            if !withdrawn { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(withdrawn, "the helper withdrew the request when the module went away")

        // A configuration others can read holds a secret in the open, and
        // one another user owns could send logins elsewhere: both refused.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: service.config.path)
        let exposed = try service.authenticate("alice")
        #expect(try await exposed.exitCode(timeout: .seconds(120)) != 0, "\(exposed.text)")
        try FileManager.default.setAttributes(
            [.posixPermissions: 0o600, .ownerAccountID: 65534], ofItemAtPath: service.config.path)
        let foreign = try service.authenticate("alice")
        #expect(try await foreign.exitCode(timeout: .seconds(120)) != 0, "\(foreign.text)")
        try FileManager.default.setAttributes([.ownerAccountID: 0], ofItemAtPath: service.config.path)
        let fine = try service.authenticate("alice")
        _ = try await fine.waitFor(#"number (\d+),"#, timeout: .seconds(120))
        fine.killNow()
    }
}

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

        init(broker: LiveBroker, user: String) async throws {
            self.user = user
            guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd") else {
                throw ProcessFailure("/usr/sbin/sshd is missing: scripts/test.sh installs openssh-server")
            }
            service = try await PAMEndToEndTests.Service(
                broker: broker, stack: ["auth required MODULE", "session required pam_permit.so"])
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
    static func setUp(_ arguments: [String]) async throws -> (LiveBroker, SSHServer, URL) {
        let broker = try await LiveBroker.start(arguments: arguments)
        let user = "cs\(UUID().uuidString.prefix(8).lowercased())"
        do {
            let laptop = try await broker.enrollMachine(user: user, name: "laptop")
            return (broker, try await SSHServer(broker: broker, user: user), laptop)
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

        let refused = try server.login()
        _ = try await refused.waitFor(#"prompt: .*number (\d+),"#, timeout: .seconds(120))
        let second = try await PAMEndToEndTests().pending(broker, user: server.user)
        let reject = try broker.agent(
            ["approve", "--event", second.ID, "--reject"], configDirectory: laptop, user: server.user)
        #expect(try await reject.exitCode(timeout: .seconds(120)) == 0, "\(reject.text)")
        refused.send("\n")
        #expect(try await refused.exitCode(timeout: .seconds(120)) == 1, "\(refused.text)")
        #expect(refused.text.contains("denied:") && !refused.text.contains("ran:"))
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
        let user = server.user
        let login = try server.login()
        _ = try await login.waitFor(#"prompt: .*number (\d+),"#, timeout: .seconds(120))
        let event = try await PAMEndToEndTests().pending(broker, user: user, status: nil)
        login.send("\n")
        _ = try await login.waitFor("prompt: .*no answer came in time", timeout: .seconds(120))
        login.send("\n")
        #expect(try await login.exitCode(timeout: .seconds(120)) == 1, "\(login.text)")
        #expect(login.text.contains("denied:") && !login.text.contains("ran:"), "\(login.text)")
        #expect(try await broker.backend.event(id: event.ID).status == .expired)
        _ = try await SyslogReceiver.start().waitFor("countersign-pam[", "denied: request \(event.ID) (expired)")
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
}

/// The module in the real sudo, for a throwaway user whom a sudoers
/// drop-in lets run commands as root after authenticating with the
/// module's PAM service (sudoers' `pam_service`; /etc/pam.d/sudo is left
/// alone). sudo reads the answers on its standard input (`-S`).
@Suite("end to end: sudo through the PAM module", .serialized)
struct SudoEndToEndTests {
    final class SudoUser {
        let name = "cs\(UUID().uuidString.prefix(8).lowercased())"
        let service: PAMEndToEndTests.Service
        let sudoers: String

        init(broker: LiveBroker) async throws {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sudo") else {
                throw ProcessFailure("/usr/bin/sudo is missing: scripts/test.sh installs sudo")
            }
            service = try await PAMEndToEndTests.Service(broker: broker)
            try await PAMEndToEndTests.addUser(name)
            // One try per sudo: each try is an authentication, and so a request.
            sudoers = "/etc/sudoers.d/\(service.name)"
            try """
            Defaults:\(name) pam_service=\(service.name), passwd_tries=1, !lecture
            \(name) ALL=(ALL) ALL

            """.write(toFile: sudoers, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o440], ofItemAtPath: sudoers)
        }

        func stop() {
            try? FileManager.default.removeItem(atPath: sudoers)
            PAMEndToEndTests.removeUser(name)
        }

        /// `sudo -S -k id -un` run by this user (-k: no cached credentials).
        func sudo() throws -> RunningProcess {
            try run(["/usr/bin/sudo", "-S", "-k", "/usr/bin/id", "-un"])
        }

        /// A command line run by this user.
        func run(_ arguments: [String]) throws -> RunningProcess {
            try RunningProcess("/usr/sbin/runuser", ["-u", name, "--"] + arguments, keepingInputOpen: true)
        }
    }

    @Test(
        "sudo shows the number; approved, the command runs as root; rejected, sudo refuses; the command is in the request"
    )
    func approveAndReject() async throws {
        let broker = try await LiveBroker.start(arguments: ["--approval-window", "2m"])
        defer { broker.stop() }
        let user = try await SudoUser(broker: broker)
        defer { user.stop() }
        let laptop = try await broker.enrollMachine(user: user.name, name: "laptop")

        let sudo = try user.sudo()
        let number = try await sudo.waitFor(#"number (\d+),"#, timeout: .seconds(120))
        let event = try await PAMEndToEndTests().pending(broker, user: user.name)
        #expect(event.details?.contains("sudo as \(user.name) on") == true, "\(event.details ?? "")")
        #expect(event.details?.hasSuffix(": sudo -S -k /usr/bin/id -un") == true, "\(event.details ?? "")")
        let approve = try broker.agent(
            ["approve", "--event", event.ID, "--yes", "--match", number], configDirectory: laptop, user: user.name)
        #expect(try await approve.exitCode(timeout: .seconds(120)) == 0, "\(approve.text)")
        sudo.send("\n")
        #expect(try await sudo.exitCode(timeout: .seconds(120)) == 0, "\(sudo.text)")
        // id's output follows sudo's prompt (no line break after an answer on -S).
        #expect(sudo.text.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix(": root"), "\(sudo.text)")

        let refused = try user.sudo()
        _ = try await refused.waitFor(#"number (\d+),"#, timeout: .seconds(120))
        let second = try await PAMEndToEndTests().pending(broker, user: user.name)
        let reject = try broker.agent(
            ["approve", "--event", second.ID, "--reject"], configDirectory: laptop, user: user.name)
        #expect(try await reject.exitCode(timeout: .seconds(120)) == 0, "\(reject.text)")
        refused.send("\n")
        #expect(try await refused.exitCode(timeout: .seconds(120)) == 1, "\(refused.text)")
        #expect(refused.text.contains("rejected") && !refused.text.contains(": root"), "\(refused.text)")
        _ = try await SyslogReceiver.start().waitFor("countersign-pam[", "request \(second.ID) rejected")
        #expect(try await broker.backend.events(user: user.name).count == 2, "one request per sudo")
    }

    @Test("what sudo runs is what the approver reads: not the argv[0] its caller chose, nor hidden past padding")
    func forgedCommand() async throws {
        let broker = try await LiveBroker.start(arguments: ["--approval-window", "2m"])
        defer { broker.stop() }
        let user = try await SudoUser(broker: broker)
        defer { user.stop() }
        _ = try await broker.enrollMachine(user: user.name, name: "laptop")
        let padding = String(repeating: ".", count: 990)
        let sudo = try user.run([
            "/bin/bash", "-c", #"exec -a "sudo apt update" /usr/bin/sudo -S -k /bin/sh -c "id -un" "$0""#, padding,
        ])
        _ = try await sudo.waitFor(#"number (\d+),"#, timeout: .seconds(120))
        let event = try await PAMEndToEndTests().pending(broker, user: user.name)
        sudo.killNow()
        let details = event.details ?? ""
        #expect(!details.contains("apt update"), "\(details)")
        #expect(details.contains(": sudo -S -k /bin/sh -c id -un ."), "\(details)")
        #expect(details.contains("characters not shown") && details.hasSuffix("..."), "\(details)")
    }
}
