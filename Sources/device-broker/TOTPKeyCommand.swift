import ArgumentParser
import CountersignBroker

/// `device-broker totp-key`: the key that seals devices' TOTP secrets.
struct TOTPKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "totp-key",
        abstract: "Manage the key that devices' TOTP secrets are sealed under.",
        subcommands: [Generate.self])

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a new random key to FILE (mode 0600); an existing file is never replaced.",
            discussion: """
                Start the broker with --totp-key-file FILE. Keep the file out of the data directory and \
                its backups: the database holds the secrets sealed, the file opens them. Losing the \
                file loses every device's TOTP codes (approvals on devices keep working).
                """)

        @Argument(help: "Where to write the key.")
        var file: String

        func run() throws {
            try TOTPVault.generateKeyFile(at: file)
            print("Wrote a new TOTP key to \(file). Start the broker with --totp-key-file \(file).")
        }
    }
}
