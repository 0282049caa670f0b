import ArgumentParser

/// `device-agent`: the CLI on each machine.
@main
struct DeviceAgent: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device-agent",
        abstract: "Sign in with a device you trust: enroll this machine, log in, approve requests.",
        subcommands: [
            Enroll.self, Login.self, Approve.self, Code.self, Devices.self, Status.self, RecoveryCodes.self, PIN.self,
        ]
    )
}
