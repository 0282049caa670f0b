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

        init(broker: LiveBroker, settings: [String: String] = [:], stack: [String]? = nil, helper: String? = nil)
            async throws
        {
            // Loud, never silent: these tests need root (a PAM service file)
            // and the tools the test script installs.
            guard getuid() == 0 else { throw ProcessFailure("the PAM tests need root to write /etc/pam.d") }
            for tool in ["/usr/bin/pamtester", "/usr/include/security/pam_modules.h"] {
                guard FileManager.default.fileExists(atPath: tool) else {
                    throw ProcessFailure("\(tool) is missing: scripts/test.sh installs pamtester and libpam0g-dev")
                }
            }
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
                + "config=\(config.path) timeout=200"
            let lines = (stack ?? ["auth required \(line)"]).map { $0.replacingOccurrences(of: "MODULE", with: line) }
            try (lines + ["account required pam_permit.so", ""]).joined(separator: "\n").write(
                toFile: "/etc/pam.d/\(name)", atomically: true, encoding: .utf8)
        }

        deinit { try? FileManager.default.removeItem(atPath: "/etc/pam.d/\(name)") }

        /// pamtester authenticating `user` with this service.
        func authenticate(_ user: String) throws -> RunningProcess {
            try RunningProcess("/usr/bin/pamtester", ["-v", name, user, "authenticate"], keepingInputOpen: true)
        }
    }

    /// The pending request the helper made for `user`.
    func pending(_ broker: LiveBroker, user: String = "alice") async throws -> EventDocument {
        for _ in 0..<600 {
            if let event = try await broker.backend.events(user: user, status: .pending).first { return event }
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

        let refused = try service.authenticate("alice")
        _ = try await refused.waitFor(#"number (\d+),"#, timeout: .seconds(120))
        let second = try await pending(broker)
        let reject = try broker.agent(["approve", "--event", second.ID, "--reject"], configDirectory: laptop)
        #expect(try await reject.exitCode(timeout: .seconds(120)) == 0, "\(reject.text)")
        refused.send("\n")
        #expect(try await refused.exitCode(timeout: .seconds(120)) != 0, "\(refused.text)")
        #expect(refused.text.contains("rejected"))
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
        let event = try await pending(broker)
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

        let safe = try await Service(broker: broker, settings: ["broker": down, "fail_mode": "safe"])
        let allowed = try safe.authenticate("alice")
        #expect(try await allowed.exitCode(timeout: .seconds(120)) == 0, "\(allowed.text)")

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
