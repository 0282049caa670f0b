public import Logging

/// One JSON object per line, for log shippers:
/// `{"time": …, "level": …, "logger": …, "message": …, <metadata>…}`, keys
/// sorted.
public typealias JSONLogHandler = BufferedLogHandler<JSONLines>

/// The object is written by hand rather than through Foundation's
/// `JSONSerialization` and date formatting, which took longer than the
/// request the line logs (docs/benchmarks.md, "The access log line").
public enum JSONLines: LogLineFormat {
    private static let ownKeys: Set<String> = ["time", "level", "logger", "message"]

    public static func line(
        _ event: LogEvent, fields: [(key: String, value: Logger.Metadata.Value)], label: String
    ) -> [UInt8] {
        var fields = fields.filter { !ownKeys.contains($0.key) }
        fields.append(("time", .string(time())))
        fields.append(("level", .string(event.level.rawValue)))
        fields.append(("logger", .string(label)))
        fields.append(("message", .string(event.message.description)))
        fields.sort { $0.key < $1.key }
        var line: [UInt8] = []
        line.reserveCapacity(320)
        line.append(UInt8(ascii: "{"))
        for (index, (key, value)) in fields.enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            string(key, into: &line)
            line.append(UInt8(ascii: ":"))
            self.value(value, into: &line)
        }
        line.append(contentsOf: "}\n".utf8)
        return line
    }

    /// `2026-11-29T10:43:27.123Z`: UTC, and says so (a trailing Z), so that
    /// a collector does not take it for local time.
    static func time() -> String {
        let now = LogTimeStamps.now()
        var text: [UInt8] = []
        text.reserveCapacity(24)
        LogTimeStamps.utc.append(second: now.second, to: &text)
        text.append(UInt8(ascii: "."))
        text.append(UInt8(ascii: "0") + UInt8(now.millisecond / 100))
        text.append(UInt8(ascii: "0") + UInt8(now.millisecond / 10 % 10))
        text.append(UInt8(ascii: "0") + UInt8(now.millisecond % 10))
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }

    static func value(_ value: Logger.Metadata.Value, into line: inout [UInt8]) {
        switch value {
        case .string(let text): string(text, into: &line)
        case .stringConvertible(let convertible): string(convertible.description, into: &line)
        case .array(let values):
            line.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                self.value(value, into: &line)
            }
            line.append(UInt8(ascii: "]"))
        case .dictionary(let values):
            line.append(UInt8(ascii: "{"))
            for (index, (key, value)) in values.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                string(key, into: &line)
                line.append(UInt8(ascii: ":"))
                self.value(value, into: &line)
            }
            line.append(UInt8(ascii: "}"))
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// A JSON string (RFC 8259): quotes, backslashes and control characters
    /// escaped, everything else as its UTF-8.
    static func string(_ text: String, into line: inout [UInt8]) {
        line.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): line.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): line.append(contentsOf: "\\\\".utf8)
            case UInt8(ascii: "\n"): line.append(contentsOf: "\\n".utf8)
            case UInt8(ascii: "\r"): line.append(contentsOf: "\\r".utf8)
            case UInt8(ascii: "\t"): line.append(contentsOf: "\\t".utf8)
            case 0..<0x20, 0x7F:
                line.append(contentsOf: "\\u00".utf8)
                line.append(hex[Int(byte >> 4)])
                line.append(hex[Int(byte & 0xF)])
            default: line.append(byte)
            }
        }
        line.append(UInt8(ascii: "\""))
    }
}
