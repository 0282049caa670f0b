public import Logging

/// A log handler whose lines are bytes appended to ``LogOutput``'s buffer,
/// in one of two layouts: ``TextLogHandler`` and ``JSONLogHandler``.
///
/// Written by hand rather than through swift-log's `StreamLogHandler`: that
/// handler renders its metadata into a string each time the metadata is set
/// (once per request, for the request id, whether or not the request is
/// ever logged), reads the time zone file for every line, and writes each
/// line with a system call of its own on the event loop
/// (docs/benchmarks.md, "The access log line", for the figures).
public struct BufferedLogHandler<Format: LogLineFormat>: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let output: LogOutput

    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.init(label: label, output: .standardOutput, metadataProvider: metadataProvider)
    }

    init(label: String, output: LogOutput, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.output = output
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let fields = LogFields.merged(metadata, metadataProvider, event)
        output.append(Format.line(event, fields: fields, label: label), urgent: event.level >= .error)
    }
}

/// How a log line is written: its bytes, final line break included.
public protocol LogLineFormat: Sendable {
    static func line(_ event: LogEvent, fields: [(key: String, value: Logger.Metadata.Value)], label: String)
        -> [UInt8]
}

/// One line per event, in swift-log's `StreamLogHandler` layout, which
/// operators' parsers know:
/// `2026-11-29T10:43:27+0000 info device-broker: hb.request.id=… http.status=200 [CountersignBroker] request`
/// (metadata sorted by key).
public typealias TextLogHandler = BufferedLogHandler<TextLines>

public enum TextLines: LogLineFormat {
    public static func line(
        _ event: LogEvent, fields: [(key: String, value: Logger.Metadata.Value)], label: String
    ) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(256)
        LogTimeStamps.local.append(second: LogTimeStamps.now().second, to: &line)
        line.append(UInt8(ascii: " "))
        line.append(contentsOf: event.level.rawValue.utf8)
        if !label.isEmpty {
            line.append(UInt8(ascii: " "))
            line.append(contentsOf: label.utf8)
        }
        line.append(UInt8(ascii: ":"))
        for (key, value) in fields {
            line.append(UInt8(ascii: " "))
            line.append(contentsOf: key.utf8)
            line.append(UInt8(ascii: "="))
            line.append(contentsOf: value.description.utf8)
        }
        line.append(contentsOf: " [".utf8)
        line.append(contentsOf: event.source.utf8)
        line.append(contentsOf: "] ".utf8)
        line.append(contentsOf: event.message.description.utf8)
        line.append(UInt8(ascii: "\n"))
        return line
    }
}

/// The fields of a log event: the logger's metadata, then its provider's,
/// then the event's own (each later one winning), and an error's message
/// and type, sorted by key.
enum LogFields {
    static func merged(_ base: Logger.Metadata, _ provider: Logger.MetadataProvider?, _ event: LogEvent)
        -> [(key: String, value: Logger.Metadata.Value)]
    {
        let provided = provider?.get() ?? [:]
        let explicit = event.metadata ?? [:]
        var fields = Array(explicit)
        fields.reserveCapacity(base.count + provided.count + explicit.count + 2)
        for field in provided where explicit[field.key] == nil { fields.append(field) }
        for field in base where explicit[field.key] == nil && provided[field.key] == nil { fields.append(field) }
        if let error = event.error {
            fields.removeAll { $0.key == "error.message" || $0.key == "error.type" }
            fields.append(("error.message", .string("\(error)")))
            fields.append(("error.type", .string(String(reflecting: type(of: error)))))
        }
        fields.sort { $0.key < $1.key }
        return fields
    }
}
