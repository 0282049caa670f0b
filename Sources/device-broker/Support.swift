import ArgumentParser
import CountersignBroker
import CountersignCore
import CountersignStore
import Foundation
import Logging

/// A duration on the command line: `500ms`, `2s`, `5m`, `1h`, `30d`, or plain seconds.
struct DurationArgument: ExpressibleByArgument, Sendable {
    let seconds: TimeInterval

    init(seconds: TimeInterval) { self.seconds = seconds }

    init?(argument: String) {
        guard let seconds = SettingsFile.seconds(argument) else { return nil }
        self.seconds = seconds
    }

    var defaultValueDescription: String {
        seconds.truncatingRemainder(dividingBy: 86400) == 0 ? "\(Int(seconds / 86400))d" : "\(Int(seconds))s"
    }
}

enum ProcessEnvironment {
    static func value(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }
}

extension StoreOptions {
    /// Runs `body` on the store the server uses (migrated), then closes it.
    func withStore<T: Sendable>(_ body: @Sendable (any CountersignStore) async throws -> T) async throws -> T {
        var logger = Logger(label: "device-broker")
        logger.logLevel = .warning
        let opened = try await configuration().openStore(logger: logger)
        let result = await Result { try await body(opened.store) }
        await opened.close()
        return try result.get()
    }

    /// A configuration naming this store. A command other than `serve`
    /// given no store at all takes the packaged service's (its settings
    /// file), and says so: a package user's `apikey create` then lands in
    /// the store the running service reads, not in a new one here.
    func configuration(packagedDefault: Bool = true) throws -> BrokerConfiguration {
        var configuration = BrokerConfiguration(dataDirectory: dataDirectory)
        configuration.databaseURL = databaseURL ?? ProcessEnvironment.value("COUNTERSIGN_DATABASE_URL")
        if packagedDefault, dataDirectoryOption == nil, configuration.databaseURL == nil, settingsFile == nil,
            ProcessEnvironment.value("COUNTERSIGN_DATA_DIR") == nil, let packaged = try PackagedSettings.read()
        {
            configuration.dataDirectory = packaged.dataDirectory ?? configuration.dataDirectory
            configuration.databaseURL = packaged.databaseURL
            FileHandle.standardError.write(
                Data(
                    ("device-broker: using the packaged service's store (\(PackagedSettings.path): "
                        + (packaged.databaseURL == nil ? configuration.dataDirectory : "its database")
                        + "); --data-dir, --database or --config chooses another\n").utf8))
        }
        // A command makes a few queries and exits; serve sets its own pool.
        configuration.databaseConnections = 2
        return configuration
    }
}

/// Prints `document` as one line of JSON, keys sorted, slashes as they
/// are: what every `--json` of the commands prints.
func printJSON(_ document: [String: Any]) throws {
    let data = try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys, .withoutEscapingSlashes])
    print(String(decoding: data, as: UTF8.self))
}
