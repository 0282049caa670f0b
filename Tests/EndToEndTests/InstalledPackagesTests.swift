import CountersignClient
import CountersignCore
import Foundation
import Testing

/// The packages of scripts/package.sh, installed on this machine with dpkg
/// (scripts/test.sh does so, as root, and then runs this suite with
/// `COUNTERSIGN_TEST_PACKAGES=1`, the PAM suites with the installed module
/// and helper). Not run otherwise: it reads and runs what dpkg installed.
@Suite(
    "installed packages: binaries without the toolchain, the broker from its unit",
    .serialized, .enabled(if: ProcessInfo.processInfo.environment["COUNTERSIGN_TEST_PACKAGES"] == "1"))
struct InstalledPackagesTests {
    static let binaries = ["/usr/bin/device-broker", "/usr/bin/device-agent"]

    @Test("the installed binaries name only Debian's libraries, no RUNPATH, and start with an empty environment")
    func selfContained() async throws {
        for binary in Self.binaries {
            let dynamic = try RunningProcess("/usr/bin/readelf", ["-d", binary])
            #expect(try await dynamic.exitCode() == 0, "\(dynamic.text)")
            let needed = dynamic.text.split(separator: "\n").filter { $0.contains("(NEEDED)") }
            #expect(!needed.isEmpty, "\(dynamic.text)")
            for line in needed {
                #expect(!line.contains("libswift") && !line.contains("libFoundation") && !line.contains("libdispatch"))
            }
            #expect(!dynamic.text.contains("RUNPATH") && !dynamic.text.contains("RPATH"), "\(dynamic.text)")
            let version = try RunningProcess(
                "/usr/bin/env", ["-i", "LD_LIBRARY_PATH=", binary, "--version"])
            #expect(try await version.exitCode() == 0, "\(version.text)")
            #expect(version.text.trimmingCharacters(in: .whitespacesAndNewlines) == CountersignVersion.current)
        }
        let module = "/lib/\(Self.multiarch)/security/pam_countersign.so"
        #expect(FileManager.default.fileExists(atPath: module), "the PAM module where Debian's own are")
    }

    @Test("postinst made the user, the data directory, the TOTP key and the migrated store; settings are 0640")
    func installed() throws {
        let data = try FileManager.default.attributesOfItem(atPath: "/var/lib/countersign")
        #expect(data[.ownerAccountName] as? String == "countersign")
        #expect((data[.posixPermissions] as? Int) == 0o700)
        let store = try FileManager.default.attributesOfItem(atPath: "/var/lib/countersign/countersign.sqlite")
        #expect(store[.ownerAccountName] as? String == "countersign")
        let settings = try FileManager.default.attributesOfItem(atPath: "/etc/countersign/broker.conf")
        #expect((settings[.posixPermissions] as? Int) == 0o640)
        #expect(settings[.groupOwnerAccountName] as? String == "countersign")
        let key = try FileManager.default.attributesOfItem(atPath: "/etc/countersign/totp.key")
        #expect((key[.posixPermissions] as? Int).map { $0 & 0o077 } == 0, "the TOTP key is root's alone")
    }

    @Test("the broker runs from its unit's command line, as its user, and serves")
    func unitCommandLine() async throws {
        let unit = try String(contentsOfFile: "/lib/systemd/system/countersign-broker.service", encoding: .utf8)
        let lines = unit.replacingOccurrences(of: "\\\n", with: " ").split(separator: "\n")
        let execStart = try #require(lines.first { $0.hasPrefix("ExecStart=") }).dropFirst("ExecStart=".count)
        let user = try #require(lines.first { $0.hasPrefix("User=") }).dropFirst("User=".count)
        // As systemd's LoadCredential does: a copy of the root-only TOTP
        // key, readable by the service's user, in a credentials directory.
        // (Not under the suite's TMPDIR, which only root may enter.)
        let credentials = URL(fileURLWithPath: "/tmp/countersign-credentials-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: credentials) }
        let key = credentials.appendingPathComponent("totp.key")
        try FileManager.default.copyItem(atPath: "/etc/countersign/totp.key", toPath: key.path)
        for path in [credentials.path, key.path] {
            try FileManager.default.setAttributes(
                [.ownerAccountName: String(user), .posixPermissions: path == key.path ? 0o400 : 0o500],
                ofItemAtPath: path)
        }
        let words = execStart.replacingOccurrences(of: "${CREDENTIALS_DIRECTORY}", with: credentials.path)
            .split(separator: " ").map(String.init)
        let port = try freePort()
        // The settings' port (8080) is overridden: flags win.
        let broker = try RunningProcess(
            "/usr/bin/setpriv",
            ["--reuid=\(user)", "--regid=\(user)", "--init-groups", "--"] + words + ["--port", String(port)])
        defer {
            broker.process.terminate()
            broker.process.waitUntilExit()
        }
        var patience = WaitBudget(.seconds(120))
        var healthy = false
        while patience.left(), !healthy {
            healthy = (try? await BrokerConnection(baseURL: "http://127.0.0.1:\(port)").health()) == true
            if !healthy {
                guard broker.process.isRunning else { break }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        #expect(healthy, "\(broker.text)")
        // The unit's settings: one JSON object per line.
        #expect(broker.text.split(separator: "\n").first?.hasPrefix("{") == true, "\(broker.text.prefix(400))")
    }

    @Test("started by hand without systemd's credential, the broker says why it cannot read the TOTP key")
    func totpKeyByHand() async throws {
        let port = try freePort()
        let broker = try RunningProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=countersign", "--regid=countersign", "--init-groups", "--", "/usr/bin/device-broker", "serve",
                "--config", "/etc/countersign/broker.conf", "--totp-key-file", "/etc/countersign/totp.key", "--port",
                String(port),
            ])
        #expect(try await broker.exitCode(timeout: .seconds(120)) != 0, "\(broker.text)")
        #expect(broker.text.contains("cannot read the TOTP key file /etc/countersign/totp.key: Permission denied"))
        #expect(broker.text.contains("owned by root") && broker.text.contains("chgrp countersign"), "\(broker.text)")
    }

    @Test("given no store, the commands open the packaged service's and say so; unreadable settings say what to do")
    func packagedStoreByDefault() async throws {
        let list = try RunningProcess("/usr/bin/device-broker", ["apikey", "list"])
        #expect(try await list.exitCode(timeout: .seconds(120)) == 0, "\(list.text)")
        #expect(
            list.text.contains(
                "using the packaged service's store (/etc/countersign/broker.conf: /var/lib/countersign)"),
            "\(list.text)")
        let nobody = try RunningProcess(
            "/usr/bin/setpriv",
            ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", "/usr/bin/device-broker", "apikey", "list"])
        #expect(try await nobody.exitCode(timeout: .seconds(120)) != 0, "\(nobody.text)")
        #expect(nobody.text.contains("cannot read /etc/countersign/broker.conf"), "\(nobody.text)")
        #expect(nobody.text.contains("sudo"), "\(nobody.text)")
    }

    @Test(
        "without systemd, removing the package stops a broker its user started by hand",
        .enabled(if: !FileManager.default.fileExists(atPath: "/run/systemd/system")))
    func prermStopsBrokerStartedByHand() async throws {
        let port = try freePort()
        let broker = try RunningProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=countersign", "--regid=countersign", "--init-groups", "--", "/usr/bin/device-broker", "serve",
                "--config", "/etc/countersign/broker.conf", "--port", String(port),
            ])
        defer { broker.stop() }
        _ = try await broker.waitFor("serving at most", timeout: .seconds(120))
        // The package's own maintainer script, as dpkg runs it before removal.
        let prerm = try RunningProcess("/var/lib/dpkg/info/countersign-broker.prerm", ["remove"])
        #expect(try await prerm.exitCode(timeout: .seconds(120)) == 0, "\(prerm.text)")
        #expect(prerm.text.contains("stopping the broker started by hand"), "\(prerm.text)")
        #expect(try await broker.exitCode(timeout: .seconds(60)) == 0, "stopped by SIGTERM: \(broker.text)")
    }

    @Test("the app backend's checks ship with the broker, and say how to run them")
    func verificationScripts() async throws {
        for script in ["verify-event-token.py", "verify-decision.py"] {
            let help = try RunningProcess("/usr/bin/python3", ["/usr/share/countersign/\(script)", "--help"])
            #expect(try await help.exitCode(timeout: .seconds(60)) == 0, "\(help.text)")
            #expect(help.text.contains("joserfc"), "\(help.text)")
        }
    }

    static var multiarch: String {
        #if arch(x86_64)
            "x86_64-linux-gnu"
        #else
            "aarch64-linux-gnu"
        #endif
    }
}
