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
            let module = try await Self.module(in: directory)
            config = directory.appendingPathComponent("pam.conf")
            var values = [
                "broker": broker.url, "api_key_id": broker.apiKeyID, "api_secret_key": broker.apiSecret,
            ]
            values.merge(settings) { $1 }
            try values.map { "\($0.key) = \($0.value)" }.sorted().joined(separator: "\n").write(
                to: config, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: config.path)
            let line =
                "\(module) helper=\(helper ?? Binaries.directory.appendingPathComponent("device-agent").path) "
                + "config=\(config.path) timeout=\(timeout)"
            let lines = (stack ?? ["auth required \(line)"]).map { $0.replacingOccurrences(of: "MODULE", with: line) }
            try (lines + ["account required pam_permit.so", ""]).joined(separator: "\n").write(
                toFile: "/etc/pam.d/\(name)", atomically: true, encoding: .utf8)
        }

        deinit { try? FileManager.default.removeItem(atPath: "/etc/pam.d/\(name)") }

        /// The module as the PAM line names it: built here from
        /// deploy/pam, or the one a package installed
        /// (`COUNTERSIGN_PAM_MODULE=pam_countersign.so`, found in PAM's
        /// own module directory).
        static func module(in directory: URL) async throws -> String {
            if let installed = ProcessInfo.processInfo.environment["COUNTERSIGN_PAM_MODULE"] { return installed }
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
            return module.path
        }

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
        #expect(refused.text.contains("refused on your device"), "\(refused.text)")
        // No further try in this conversation (PAM_MAXTRIES).
        #expect(refused.text.contains("maximum number of retries"), "\(refused.text)")
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

    @Test("no answer before the window closes: the second prompt takes a code, and the request reads approved by TOTP")
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
        // The login that got in is on record as one: the backend's list
        // shows it approved, by the code, not expired.
        let recorded = try await broker.backend.event(id: event.ID)
        #expect(recorded.status == .approved && recorded.method == .totp, "\(recorded)")
        let listed = try await broker.backend.events(user: "alice", status: .approved)
        #expect(listed.map(\.ID) == [event.ID])
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
        #expect(allowed.text.contains("let in without an approval (fail_mode safe)"), "told: \(allowed.text)")
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

    @Test("a helper whose module went away at the prompt withdraws the request and exits, without crashing")
    func helperOutlivesItsModule() async throws {
        let broker = try await LiveBroker.start(arguments: ["--approval-window", "2m"])
        defer { broker.stop() }
        _ = try await broker.enrollMachine(name: "laptop")
        let service = try await Service(broker: broker)
        // The module's side of the socket, played by Python: read the first
        // prompt, close, and report how the helper ended (a crash is a
        // negative code: the signal; the backtracer is off to keep it so).
        let script = """
            import socket, subprocess, sys
            parent, child = socket.socketpair()
            helper = subprocess.Popen(
                [sys.argv[1], "pam-helper", "--config", sys.argv[2], "--user", "alice", "--service", "sshd",
                 "--rhost", "", "--tty", "", "--command", ""],
                stdin=child, stdout=child, env={"PATH": "/usr/bin:/bin", "SWIFT_BACKTRACE": "enable=no"})
            child.close()
            print("first:", parent.makefile("r").readline().strip(), flush=True)
            parent.close()
            print("exit:", helper.wait(timeout=120), flush=True)
            """
        let module = try RunningProcess(
            "/usr/bin/python3",
            ["-c", script, Binaries.directory.appendingPathComponent("device-agent").path, service.config.path])
        #expect(try await module.exitCode(timeout: .seconds(180)) == 0, "\(module.text)")
        #expect(module.text.contains("first: prompt Countersign: approve"), "\(module.text)")
        let status = try #require(Int(try await module.waitFor(#"exit: (-?\d+)"#)), "\(module.text)")
        #expect(status >= 0, "the helper ended by signal \(-status): \(module.text)")
        #expect(try await pending(broker, status: nil).statusReason == .withdrawn)
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
        #expect(exposed.text.contains("login configuration is unusable"), "told: \(exposed.text)")
        // Run by hand, the helper prints why (no syslog may be listening).
        let byHand = try RunningProcess(
            Binaries.directory.appendingPathComponent("device-agent").path,
            ["pam-helper", "--user", "alice", "--config", service.config.path])
        #expect(try await byHand.exitCode(timeout: .seconds(120)) == 0, "\(byHand.text)")
        #expect(
            byHand.text.contains("device-agent pam-helper: the configuration \(service.config.path) holds a secret")
                && byHand.text.contains("chmod 600"), "\(byHand.text)")
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
