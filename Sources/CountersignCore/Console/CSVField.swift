import Foundation

/// One field of a CSV export (RFC 4180), safe to open in a spreadsheet.
public enum CSVField {
    /// `value` quoted when it holds a comma, a quote or a line break
    /// (quotes doubled); a value that a spreadsheet would run as a formula
    /// (it starts with `=`, `+`, `-`, `@`, a tab or a carriage return:
    /// OWASP's "CSV injection") is prefixed with `'`, shown as text. A
    /// requester names itself, so an export must not run what it chose.
    public static func escape(_ value: String) -> String {
        var text = value
        if let first = text.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) { text = "'" + text }
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A line of fields, ended by CRLF.
    public static func line(_ values: [String]) -> String {
        values.map(escape).joined(separator: ",") + "\r\n"
    }
}
