import ArgumentParser
import CountersignCore

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
            PIN.self, PAMHelper.self,
        ]
    )

    static func main() async {
        lineBufferStandardOutput()
        do {
            var command = try parseAsRoot()
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    /// What the agent sends as `User-Agent`.
    static let userAgent = "device-agent/\(CountersignVersion.current)"
}
