import CountersignClient
import CountersignCore
import Foundation
import Testing

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
        #expect(
            refused.text.contains("refused on your device") && !refused.text.contains(": root"), "\(refused.text)")
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
