/// A settings file as an operator writes one: a `name = value` per line.
/// A `#` at the start of a line or after a space starts a comment, so a
/// value may hold one (`postgres://u:pa#ss@host`); blank lines are skipped.
/// The PAM helper's configuration and the broker's `--config` file are
/// both written so.
public struct SettingsFile: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public let name: String
        public let value: String
        /// Its line in the file, from 1, for the error that names it.
        public let line: Int

        public init(name: String, value: String, line: Int) {
            self.name = name
            self.value = value
            self.line = line
        }
    }

    /// A line that is not a setting, said with the file and line.
    public struct Problem: Error, Equatable, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    public let path: String
    /// In the file's order, repeated names included.
    public let entries: [Entry]

    public init(text: String, path: String) throws(Problem) {
        self.path = path
        var entries: [Entry] = []
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: Self.endsLine).enumerated() {
            let line = Self.withoutComment(raw)
            guard !line.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) else { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw Problem("\(path):\(index + 1): expected name = value")
            }
            let name = Self.trimmed(line[..<equals])
            guard !name.isEmpty, !name.contains(where: { $0 == " " || $0 == "\t" }) else {
                throw Problem("\(path):\(index + 1): expected name = value")
            }
            entries.append(Entry(name: name, value: Self.trimmed(line[line.index(after: equals)...]), line: index + 1))
        }
        self.entries = entries
    }

    /// The value of the last line that sets `name`.
    public subscript(name: String) -> String? {
        entries.last { $0.name == name }?.value
    }

    /// The first setting not among `known`, for an error that names it.
    public func firstUnknown(among known: Set<String>) -> Entry? {
        entries.first { !known.contains($0.name) }
    }

    /// The first setting given on more than one line.
    public func firstRepeated() -> Entry? {
        var seen = Set<String>()
        return entries.first { !seen.insert($0.name).inserted }
    }

    /// A line ends with LF or CRLF (one `Character` in Swift).
    private static func endsLine(_ character: Character) -> Bool {
        character == "\n" || character == "\r\n"
    }

    private static func withoutComment(_ line: Substring) -> Substring {
        var previous: Character = " "
        for index in line.indices {
            if line[index] == "#" && (previous == " " || previous == "\t") { return line[..<index] }
            previous = line[index]
        }
        return line
    }

    private static func trimmed(_ text: Substring) -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let start = text.firstIndex(where: { !blank($0) }), let end = text.lastIndex(where: { !blank($0) })
        else { return "" }
        return String(text[start...end])
    }
}

extension SettingsFile {
    /// A duration as settings and command lines write one: `500ms`, `2s`,
    /// `5m`, `1h`, `30d`, or plain seconds; nil for anything else.
    public static func seconds(_ text: String) -> Double? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            guard let value = Double(text.dropLast(suffix.count)), value >= 0 else { return nil }
            return value * scale
        }
        guard let value = Double(text), value >= 0 else { return nil }
        return value
    }
}
