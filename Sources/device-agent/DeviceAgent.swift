import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation

/// `device-agent`: the CLI on each machine.
@main
struct DeviceAgent: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device-agent",
        abstract: "Sign in with a device you trust: enroll this machine, log in, approve requests.",
        discussion: """
            After `enroll`, the config directory remembers the broker, API key and user: the other \
            commands need no flags on that machine. Flags, then COUNTERSIGN_BROKER, \
            COUNTERSIGN_API_KEY, COUNTERSIGN_USER and COUNTERSIGN_AGENT_DIR, override it.

            Shell completion: `device-agent --generate-completion-script bash` (or zsh, fish) \
            prints a script to source.
            """,
        version: CountersignVersion.current,
        subcommands: [
            Enroll.self, Login.self, Approve.self, Watch.self, Code.self, Devices.self, Push.self, Service.self,
            Status.self, RecoveryCodes.self,
            PIN.self, SecurityKey.self, PAMHelper.self,
        ]
    )

    static func main() async {
        lineBufferStandardOutput()
        if let typed = CommandLine.arguments.dropFirst().first, let nearest = nearestCommand(to: typed) {
            // Otherwise ArgumentParser names the first option it cannot
            // place ("Unknown option '--config-dir'"), not the typo.
            exit(
                withError: usageFailure(
                    "there is no command '\(DisplayText.escaped(typed))'; did you mean '\(nearest)'? "
                        + "(device-agent --help lists them)"))
        }
        do {
            var command = try parseAsRoot()
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch let error as CountersignError where error.code == "device_revoked" || error.code == "unknown_device" {
            FileHandle.standardError.write(
                Data(
                    ("Error: \(error). This machine is no longer a trusted device. To trust it again, pair it "
                        + "with `device-agent login --trust` (approved on a device that is still trusted), or "
                        + "enroll it with a new token from the app (`device-agent enroll --token`).\n").utf8))
            exit(withError: ExitCode.failure)
        } catch {
            exit(withError: error)
        }
    }

    /// The command `typed` was likely meant to be, when it is none: the
    /// nearest name by edit distance, if within two edits (or a third of
    /// its length).
    static func nearestCommand(to typed: String) -> String? {
        guard !typed.hasPrefix("-") else { return nil }
        let names = configuration.subcommands.map { $0._commandName } + ["help"]
        guard !names.contains(typed) else { return nil }
        let scored = names.map { ($0, editDistance(Array(typed.lowercased()), Array($0))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, typed.count / 3) else { return nil }
        return best.0
    }

    /// Levenshtein distance, with a swap of two neighbours as one edit.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var rows = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { rows[i][0] = i }
        for j in 0...b.count { rows[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
                }
            }
        }
        return rows[a.count][b.count]
    }

    /// What the agent sends as `User-Agent`.
    static let userAgent = "device-agent/\(CountersignVersion.current)"
}
