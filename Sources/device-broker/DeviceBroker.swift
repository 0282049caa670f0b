import ArgumentParser

/// `device-broker`: the Countersign event service.
@main
struct DeviceBroker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device-broker",
        abstract: "Countersign's broker: trusted devices countersign logins and transactions.",
        subcommands: [Serve.self, APIKeyCommand.self, TOTPKeyCommand.self],
        defaultSubcommand: Serve.self
    )
}

/// Options every subcommand that opens the store shares.
struct StoreOptions: ParsableArguments {
    @Option(
        name: .customLong("data-dir"),
        help: "Directory of the SQLite database (env COUNTERSIGN_DATA_DIR).")
    var dataDirectory: String = ProcessEnvironment.value("COUNTERSIGN_DATA_DIR") ?? "./countersign-data"
}
