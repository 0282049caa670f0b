import Foundation
public import Logging
import Synchronization

/// Logs as one JSON object per line on standard output, for log shippers:
/// `{"time": …, "level": …, "logger": …, "message": …, <metadata>…}`.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public var metadataProvider: Logger.MetadataProvider?
    let label: String

    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    private static let output = Mutex(())

    public func log(event: LogEvent) {
        var fields: [String: Any] = [:]
        let merged = metadata.merging(metadataProvider?.get() ?? [:]) { $1 }
            .merging(event.metadata ?? [:]) { $1 }
        for (key, value) in merged { fields[key] = Self.json(value) }
        // UTC, and says so (a trailing Z): a collector must not take it for local time.
        fields["time"] = Date().formatted(
            .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
        fields["level"] = event.level.rawValue
        fields["logger"] = label
        fields["message"] = event.message.description
        guard
            var line = try? JSONSerialization.data(
                withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        line.append(UInt8(ascii: "\n"))
        Self.output.withLock { _ in FileHandle.standardOutput.write(line) }
    }

    private static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): values.map(json)
        case .dictionary(let values): values.mapValues(json)
        }
    }
}
