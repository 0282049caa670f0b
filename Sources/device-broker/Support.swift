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
        let units: [(String, TimeInterval)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        for (suffix, scale) in units where argument.hasSuffix(suffix) {
            guard let value = Double(argument.dropLast(suffix.count)), value >= 0 else { return nil }
            self.seconds = value * scale
            return
        }
        guard let value = Double(argument), value >= 0 else { return nil }
        self.seconds = value
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

    /// A configuration naming this store.
    func configuration() -> BrokerConfiguration {
        var configuration = BrokerConfiguration(dataDirectory: dataDirectory)
        configuration.databaseURL = databaseURL ?? ProcessEnvironment.value("COUNTERSIGN_DATABASE_URL")
        // A command makes a few queries and exits; serve sets its own pool.
        configuration.databaseConnections = 2
        return configuration
    }
}
