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
        if let suggestion = suggestion(for: Array(CommandLine.arguments.dropFirst())) {
            // Otherwise ArgumentParser names the first option it cannot
            // place ("Unknown option '--config-dir'"), not the typo.
            exit(withError: usageFailure(suggestion.message(tool: "device-agent")))
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

    /// A mistyped command word in `arguments`, with the nearest command.
    static func suggestion(for arguments: [String]) -> CommandSuggestion? {
        CommandSuggestion.find(
            in: arguments, root: DeviceAgent.self as any ParsableCommand.Type,
            children: { $0.configuration.subcommands },
            name: { $0._commandName })
    }

    /// What the agent sends as `User-Agent`.
    static let userAgent = "device-agent/\(CountersignVersion.current)"
}
