import ArgumentParser
import CountersignCore

/// `device-broker`: the Countersign event service.
struct DeviceBroker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device-broker",
        abstract: "Countersign's broker: trusted devices countersign logins and transactions.",
        discussion: """
            Shell completion: `device-broker --generate-completion-script bash` (or zsh, fish) \
            prints a script to source.
            """,
        version: CountersignVersion.current,
        subcommands: [
            Serve.self, APIKeyCommand.self, KeysCommand.self, VAPIDKeyCommand.self, TOTPKeyCommand.self, Migrate.self,
            BackupCommand.self, WebhookCommand.self, HealthCheckCommand.self, OperatorCommand.self, AuditCommand.self,
            RADIUSCommand.self, DirectoryCommand.self,
        ],
        defaultSubcommand: Serve.self
    )

    /// A mistyped command word in `arguments`, with the nearest command.
    static func suggestion(for arguments: [String]) -> CommandSuggestion? {
        CommandSuggestion.find(
            in: arguments, root: DeviceBroker.self as any ParsableCommand.Type,
            children: { $0.configuration.subcommands },
            name: { $0._commandName })
    }
}

/// `device-broker migrate`: brings the store's schema up to date.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply the store's pending migrations and exit (serve also does at start).",
        discussion: """
            Migrations are never edited once shipped. A database that a newer broker migrated is \
            refused rather than used.
            """)

    @OptionGroup var store: StoreOptions

    func run() async throws {
        try await store.withStore { _ in }
        print("The store's schema is up to date.")
    }
}

/// Options every subcommand that opens the store shares.
struct StoreOptions: ParsableArguments {
    @Option(
        name: .customLong("data-dir"),
        help: """
            Directory of the SQLite database (env COUNTERSIGN_DATA_DIR; default ./countersign-data, or for \
            the commands other than serve, the store of \(PackagedSettings.path) when that file exists).
            """)
    var dataDirectoryOption: String?

    /// The directory `serve` keeps its SQLite file in.
    var dataDirectory: String {
        dataDirectoryOption ?? ProcessEnvironment.value("COUNTERSIGN_DATA_DIR") ?? "./countersign-data"
    }

    @Option(
        name: .customLong("database"),
        help: """
            A postgres:// URL (env COUNTERSIGN_DATABASE_URL) to keep everything in PostgreSQL, shared by \
            several broker instances, instead of the SQLite file in --data-dir. \
            postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require|verify-ca|verify-full\
            [&sslrootcert=CA.pem]]
            """)
    var databaseURL: String?

    @Option(
        name: .customLong("config"),
        help: """
            A settings file: one `name = value` per line for an option `--name` of `serve` (`name = true` \
            for a flag); options on the command line win. Other commands take its data-dir and database.
            """)
    var settingsFile: String?

    /// What the commands other than `serve` take from the settings file.
    static let names: Set<String> = ["data-dir", "database"]
}
