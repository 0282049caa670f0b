import Foundation
import Testing

/// `device-agent watch` and `approve --notify` against a real D-Bus session
/// bus and scripts/notification-server.py; the systemd user unit checked by
/// systemd-analyze.
@Suite("end to end: desktop notifications and the background service")
struct DesktopNotificationTests {
    struct Notification: Decodable {
        let app_name: String
        let summary: String
        let body: String
        let urgency: Int?
    }

    /// A private session bus and a notification server on it.
    static func startBus() async throws -> (bus: RunningProcess, server: RunningProcess, address: String) {
        let directory = try temporaryDirectory("session-bus")
        let bus = try RunningProcess(
            "/usr/bin/dbus-daemon",
            ["--session", "--nofork", "--print-address", "--address=unix:path=\(directory.path)/bus"])
        let address = try await bus.waitFor(#"(unix:path=[^\n]+)"#, timeout: .seconds(30))
        let server = try RunningProcess(
            "/usr/bin/env", ["python3", scriptsDirectory.appendingPathComponent("notification-server.py").path],
            environment: ["DBUS_SESSION_BUS_ADDRESS": address])
        _ = try await server.waitFor("ready", timeout: .seconds(30))
        return (bus, server, address)
    }

    static func notifications(_ server: RunningProcess) -> [Notification] {
        server.text.split(separator: "\n").compactMap {
            try? JSONDecoder().decode(Notification.self, from: Data($0.utf8))
        }
    }

    @Test("watch raises one notification per request: who asks, escaped, urgent; never the number")
    func watchNotifies() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let (bus, server, address) = try await Self.startBus()
        defer {
            server.stop()
            bus.stop()
        }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let watch = try broker.agent(
            ["watch"], configDirectory: laptop, environment: ["DBUS_SESSION_BUS_ADDRESS": address])
        defer { watch.stop() }
        _ = try await watch.waitFor("Watching for requests")
        let machine = try temporaryDirectory("machine-B").appendingPathComponent("countersign")
        let (login, _, number) = try await broker.startLogin(machine: machine, name: "<b>evil</b>&co")
        defer { login.stop() }
        let deadline = ContinuousClock.now + .seconds(60)
        while Self.notifications(server).isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let shown = Self.notifications(server)
        #expect(shown.count == 1, "one notification: \(server.text)\n\(watch.text)")
        let notification = try #require(shown.first)
        #expect(notification.app_name == "Countersign")
        #expect(notification.summary == "Log-in request for alice")
        #expect(notification.body.contains("demo: &lt;b&gt;evil&lt;/b&gt;&amp;co (127.0.0.1)"), "\(notification.body)")
        #expect(!notification.body.contains("<b>"), "markup in a requester's name is escaped")
        #expect(!notification.body.contains(" \(number)"), "the number is not in a notification")
        #expect(notification.urgency == 2, "critical: a request waits a minute at most")
        // A second request is announced once; the first, still waiting,
        // is not again (it would have come before the second's).
        let (second, _, _) = try await broker.startLogin(
            machine: try temporaryDirectory("machine-C").appendingPathComponent("countersign"), name: "machine-C")
        defer { second.stop() }
        while Self.notifications(server).count < 2, ContinuousClock.now < deadline + .seconds(60) {
            try await Task.sleep(for: .milliseconds(50))
        }
        let both = Self.notifications(server)
        #expect(both.count == 2, "\(server.text)\n\(watch.text)")
        #expect(both.last?.body.contains("machine-C") == true, "the second is the new request: \(both)")
    }

    @Test("service install writes a systemd user unit that systemd-analyze verifies, running watch for the account")
    func serviceUnit() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let units = try temporaryDirectory("units")
        let install = try broker.agent(
            ["service", "install", "--no-start", "--unit-directory", units.path], configDirectory: laptop)
        #expect(try await install.exitCode() == 0, "\(install.text)")
        let file = units.appendingPathComponent("countersign-watch-alice.service")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains(#""watch" "--broker" "\#(broker.url)""#) && text.contains("WantedBy=default.target"))
        let verify = try RunningProcess("/usr/bin/systemd-analyze", ["verify", file.path])
        #expect(try await verify.exitCode() == 0, "\(verify.text)")
        let uninstall = try broker.agent(
            ["service", "uninstall", "--unit-directory", units.path], configDirectory: laptop)
        #expect(try await uninstall.exitCode() == 0)
        #expect(!FileManager.default.fileExists(atPath: file.path))

        // In the default directory, where no user bus answers (no
        // XDG_RUNTIME_DIR, as in a container): removed, and no bus errors.
        let home = try temporaryDirectory("home")
        let environment = [
            "HOME": home.path, "XDG_CONFIG_HOME": home.appendingPathComponent(".config").path, "XDG_RUNTIME_DIR": "",
            "DBUS_SESSION_BUS_ADDRESS": "",
        ]
        let placed = try broker.agent(
            ["service", "install", "--no-start"], configDirectory: laptop, environment: environment)
        #expect(try await placed.exitCode() == 0, "\(placed.text)")
        let removed = try broker.agent(["service", "uninstall"], configDirectory: laptop, environment: environment)
        #expect(try await removed.exitCode() == 0, "\(removed.text)")
        #expect(removed.text.contains("Removed \(home.path)/.config/systemd/user/"), "\(removed.text)")
        #expect(!removed.text.contains("Failed to connect") && !removed.text.contains("bus"), "\(removed.text)")
    }
}
