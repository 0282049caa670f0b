import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation

extension DeviceAgent {
    struct Service: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start `device-agent watch` at login, as a per-user background service.",
            discussion: """
                On Linux this is a systemd user unit, in ~/.config/systemd/user: it runs \
                `device-agent watch` for this account whenever you are logged in, so each request \
                raises a desktop notification. Elsewhere, run `device-agent watch` from your \
                desktop's start-up programs (on macOS, a LaunchAgent). A background service cannot \
                type a PIN: an account protected by one is refused.
                """,
            subcommands: [Install.self, Uninstall.self])

        struct Install: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Write the systemd user unit for this account, enable it and start it.")

            @OptionGroup var account: AccountOptions

            @Flag(help: "Write the unit only; do not enable or start it.")
            var noStart = false

            @Option(help: "Where to write the unit (default: ~/.config/systemd/user).")
            var unitDirectory: String?

            func run() async throws {
                let stored = try account.enrolledAccount()
                guard !stored.isPINProtected else {
                    throw AgentFailure(
                        "this account's key is protected by a PIN, which a background service cannot type; "
                            + "run device-agent watch in a terminal instead")
                }
                let unit = UserUnit(account: stored, configDirectory: account.credentials.directory.path)
                let directory = URL(fileURLWithPath: unitDirectory ?? UserUnit.defaultDirectory())
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                let file = directory.appendingPathComponent(unit.name)
                try Data(unit.text.utf8).write(to: file, options: .atomic)
                print("Wrote \(file.path).")
                guard !noStart else {
                    print("Start it with: systemctl --user enable --now \(unit.name)")
                    return
                }
                do {
                    try UserUnit.systemctl(["daemon-reload"])
                    try UserUnit.systemctl(["enable", "--now", unit.name])
                } catch let failure as AgentFailure {
                    throw AgentFailure(
                        "\(failure.description) The unit is written; start it later with: "
                            + "systemctl --user enable --now \(unit.name)")
                }
                print("Started \(unit.name): requests for \(shown(stored.clientUserID)) now raise notifications.")
            }
        }

        struct Uninstall: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Stop the service and remove its unit.")

            @OptionGroup var account: AccountOptions

            @Option(help: "Where the unit is (default: ~/.config/systemd/user).")
            var unitDirectory: String?

            func run() async throws {
                let stored = try account.enrolledAccount()
                let unit = UserUnit(account: stored, configDirectory: account.credentials.directory.path)
                let file = URL(fileURLWithPath: unitDirectory ?? UserUnit.defaultDirectory())
                    .appendingPathComponent(unit.name)
                var stopped = true
                if unitDirectory == nil {
                    stopped = (try? UserUnit.systemctl(["disable", "--now", unit.name])) != nil
                }
                guard FileManager.default.fileExists(atPath: file.path) else {
                    print("No unit \(file.path) to remove.")
                    return
                }
                try FileManager.default.removeItem(at: file)
                if unitDirectory == nil, stopped { try? UserUnit.systemctl(["daemon-reload"]) }
                print("Removed \(file.path).")
                if !stopped {
                    print(
                        "systemctl --user did not answer (no systemd user manager here?), so nothing was "
                            + "stopped; a device-agent watch still running stops with its session.")
                }
            }
        }
    }
}

/// The systemd user unit that runs `device-agent watch` for one account.
struct UserUnit {
    let account: StoredAccount
    let configDirectory: String

    /// `countersign-watch-USER.service`, the user id reduced to the
    /// characters a unit name takes.
    var name: String {
        let safe = account.clientUserID.unicodeScalars.map {
            CharacterSet.alphanumerics.contains($0) && $0.isASCII ? String($0) : "_"
        }.joined()
        return "countersign-watch-\(safe.prefix(64)).service"
    }

    var text: String {
        // The running binary itself, wherever the PATH found it.
        let executable =
            Bundle.main.executableURL?.resolvingSymlinksInPath().path
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
        let command = [
            executable, "watch", "--broker", account.broker, "--api-key", account.apiKeyID, "--user",
            account.clientUserID, "--config-dir", configDirectory,
        ].map(Self.quoted).joined(separator: " ")
        return """
            [Unit]
            Description=Countersign: a notification for each request for \(Self.specifiersEscaped(account.clientUserID))
            After=graphical-session.target

            [Service]
            Type=simple
            ExecStart=\(command)
            Restart=on-failure
            RestartSec=10

            [Install]
            WantedBy=default.target

            """
    }

    static func defaultDirectory() -> String {
        let config =
            ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"]
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config").path
        return (config as NSString).appendingPathComponent("systemd/user")
    }

    /// One ExecStart word: double-quoted, with systemd's escapes for
    /// quotes, backslashes and its `%` specifiers.
    static func quoted(_ word: String) -> String {
        "\""
            + specifiersEscaped(word).replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    static func specifiersEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "%", with: "%%")
    }

    /// Runs `systemctl --user`; its own complaint (such as "Failed to
    /// connect to bus" where no user manager runs: a container, an ssh
    /// session without lingering) is kept for the failure, not printed.
    static func systemctl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["systemctl", "--user"] + arguments
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let why = String(decoding: said, as: UTF8.self).split(separator: "\n").first.map { " (\($0))" } ?? ""
            throw AgentFailure(
                "systemctl --user \(arguments.joined(separator: " ")) failed\(why); is a systemd user manager "
                    + "running for you?")
        }
    }
}
