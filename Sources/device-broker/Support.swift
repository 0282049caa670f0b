import ArgumentParser
import CountersignBroker
import CountersignSQLite
import Foundation

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

enum BrokerStoreOpener {
    /// Opens the store the server uses, for the administrative commands.
    static func open(_ dataDirectory: String) throws -> SQLiteStore {
        try BrokerConfiguration(dataDirectory: dataDirectory).openStore()
    }
}
