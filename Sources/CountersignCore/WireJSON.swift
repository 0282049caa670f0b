public import Foundation

/// A document the broker sends on every round trip, written straight to
/// bytes: the same bytes as ``WireCoding/encoder()`` makes of it, without
/// going through `Encodable`'s containers, which took most of the time of
/// encoding a response.
public protocol WireJSONWritable {
    /// Writes the document's fields, keys in ascending byte order as
    /// `.sortedKeys` orders them, leaving out nil optionals as `Encodable`
    /// does.
    func write(to object: inout WireJSON.Object)
}

extension WireJSONWritable {
    /// The document as JSON.
    public func wireJSON() -> [UInt8] {
        var object = WireJSON.Object()
        object.open()
        write(to: &object)
        object.close()
        return object.bytes
    }
}

/// Writing JSON as ``WireCoding/encoder()`` does: no whitespace, slashes
/// unescaped, control characters escaped, other characters as UTF-8, dates
/// in RFC 3339 with milliseconds.
public enum WireJSON {
    /// The fields of one JSON object, and what came before them.
    public struct Object {
        fileprivate(set) var bytes: [UInt8] = []
        private var empty = true

        init() { bytes.reserveCapacity(1024) }

        mutating func open() {
            bytes.append(UInt8(ascii: "{"))
            empty = true
        }

        mutating func close() {
            bytes.append(UInt8(ascii: "}"))
            empty = false
        }

        private mutating func key(_ key: StaticString) {
            if !empty { bytes.append(UInt8(ascii: ",")) }
            empty = false
            bytes.append(UInt8(ascii: "\""))
            key.withUTF8Buffer { bytes.append(contentsOf: $0) }
            bytes.append(UInt8(ascii: "\""))
            bytes.append(UInt8(ascii: ":"))
        }

        public mutating func field(_ name: StaticString, _ value: String?) {
            guard let value else { return }
            key(name)
            WireJSON.append(string: value, to: &bytes)
        }

        /// A field that is always written: `null` when there is no value,
        /// for a format whose readers expect every field on every line.
        public mutating func field(_ name: StaticString, orNull value: String?) {
            guard let value else {
                key(name)
                bytes.append(contentsOf: "null".utf8)
                return
            }
            field(name, value)
        }

        public mutating func field(_ name: StaticString, _ value: Bool) {
            key(name)
            if value { bytes.append(contentsOf: "true".utf8) } else { bytes.append(contentsOf: "false".utf8) }
        }

        public mutating func field(_ name: StaticString, _ value: Int?) {
            guard let value else { return }
            key(name)
            bytes.append(contentsOf: String(value).utf8)
        }

        public mutating func field(_ name: StaticString, _ value: Date?) {
            guard let value else { return }
            key(name)
            bytes.append(UInt8(ascii: "\""))
            WireJSON.append(rfc3339: value, to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        }

        public mutating func field(_ name: StaticString, _ value: (some WireJSONWritable)?) {
            guard let value else { return }
            key(name)
            open()
            value.write(to: &self)
            close()
        }

        public mutating func field(_ name: StaticString, _ values: [String]) {
            key(name)
            bytes.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                WireJSON.append(string: value, to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        }

        public mutating func field(_ name: StaticString, _ values: [some WireJSONWritable]) {
            key(name)
            bytes.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                open()
                value.write(to: &self)
                close()
            }
            bytes.append(UInt8(ascii: "]"))
        }
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\b`,
    /// `\f`, `\n`, `\r`, `\t` or `\u00XX`, everything else as it is.
    static func append(string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), byte])
            case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let low = byte & 0xF
                bytes.append(contentsOf: "\\u00".utf8)
                bytes.append(UInt8(ascii: "0") + byte >> 4)
                bytes.append(low < 10 ? UInt8(ascii: "0") + low : UInt8(ascii: "a") + low - 10)
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// `yyyy-MM-ddTHH:mm:ss.SSSZ` in UTC, the milliseconds truncated, as
    /// `Date.ISO8601FormatStyle(includingFractionalSeconds: true)` writes
    /// years 1 to 9999.
    static func append(rfc3339 date: Date, to bytes: inout [UInt8]) {
        let time = date.timeIntervalSince1970
        let seconds = time.rounded(.down)
        let milliseconds = min(999, Int(((time - seconds) * 1000).rounded(.down)))
        let (days, secondOfDay) = Int(seconds).quotientAndRemainder(dividingBy: 86400)
        let (day, second) = secondOfDay < 0 ? (days - 1, secondOfDay + 86400) : (days, secondOfDay)
        let (year, month, dayOfMonth) = civil(daysSinceEpoch: day)
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        digits(year, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(month, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(dayOfMonth, 2)
        bytes.append(UInt8(ascii: "T"))
        digits(second / 3600, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(second / 60 % 60, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(second % 60, 2)
        bytes.append(UInt8(ascii: "."))
        digits(milliseconds, 3)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// The proleptic Gregorian date of a day counted from 1970-01-01
    /// (Howard Hinnant's `civil_from_days`).
    static func civil(daysSinceEpoch days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
