import Foundation

/// Text that someone other than the approver chose (an app backend, a
/// requester, a new machine) and that the approver will read before
/// deciding: an event's details, location and requesting machine, device
/// and app names, the user's id.
///
/// Such text may hold no character that changes how the rest is shown
/// rather than showing itself: control characters (an escape sequence can
/// rewrite a terminal, a line break can forge a line), format characters
/// (a right-to-left override can turn "EUR 1.00" around, a zero-width
/// space can hide between letters), line and paragraph separators, and
/// private-use or unassigned code points (which any font may draw as it
/// likes). The broker refuses such text; the agent escapes it, whatever a
/// broker sends.
public enum DisplayText {
    /// Why text was refused.
    public enum Refusal: Error, Equatable, Sendable {
        case empty
        /// Longer than `maximum` characters (Unicode code points).
        case tooLong(maximum: Int)
        /// Holds a character that is not shown as itself, at this offset
        /// (in Unicode scalars).
        case hiddenCharacter(Unicode.Scalar, offset: Int)
        /// Not an IPv4 or IPv6 address.
        case notAnAddress
        /// More than ``maxStackedMarks`` combining marks on one character,
        /// at this offset: they pile up over the text around it.
        case stackedMarks(offset: Int)
    }

    /// The most combining marks taken on one character: writing systems
    /// stack up to three or four; more only smear over neighbouring text.
    public static let maxStackedMarks = 4

    /// What a field takes.
    public struct Field: Sendable {
        /// Its name in the API.
        public let name: String
        /// At most this many characters, counted as JSON Schema's
        /// `maxLength` counts them: Unicode code points.
        public let maximumLength: Int

        public init(name: String, maximumLength: Int) {
            self.name = name
            self.maximumLength = maximumLength
        }

        /// What a transaction is about.
        public static let details = Field(name: "details", maximumLength: 1024)
        /// Where the requester is, as the app backend tells it.
        public static let location = Field(name: "location", maximumLength: 128)
        /// The requesting machine's own name for itself.
        public static let requesterName = Field(name: "requester_name", maximumLength: 128)
        /// A device's name, and its type.
        public static let deviceName = Field(name: "name", maximumLength: 128)
        public static let deviceType = Field(name: "type", maximumLength: 64)
        /// An app's (an API key's) name.
        public static let appName = Field(name: "name", maximumLength: 128)
        /// A CIBA client's `binding_message`: short, as the specification
        /// asks, since the person compares it with the client's screen.
        public static let bindingMessage = Field(name: "binding_message", maximumLength: 64)
    }

    /// The text as stored (without leading and trailing white space, each
    /// run of white space inside made one space, so that padding cannot push
    /// what follows out of sight), or why it is refused.
    public static func check(_ text: String, as field: Field) -> Result<String, Refusal> {
        var trimmed = ""
        var spacing = false
        for scalar in text.trimmingCharacters(in: .whitespacesAndNewlines).unicodeScalars {
            // Spaces of any width, in a run or alone, become one plain space;
            // line breaks and tabs are left for the check below to refuse.
            if scalar.properties.generalCategory == .spaceSeparator {
                if !spacing { trimmed.unicodeScalars.append(" ") }
                spacing = true
            } else {
                trimmed.unicodeScalars.append(scalar)
                spacing = false
            }
        }
        guard !trimmed.isEmpty else { return .failure(.empty) }
        guard trimmed.unicodeScalars.count <= field.maximumLength else {
            return .failure(.tooLong(maximum: field.maximumLength))
        }
        var stacked = 0
        for (offset, scalar) in trimmed.unicodeScalars.enumerated() {
            if isHidden(scalar) { return .failure(.hiddenCharacter(scalar, offset: offset)) }
            let category = scalar.properties.generalCategory
            stacked = category == .nonspacingMark || category == .enclosingMark ? stacked + 1 : 0
            if stacked > maxStackedMarks { return .failure(.stackedMarks(offset: offset)) }
        }
        return .success(trimmed)
    }

    /// The client address an app backend names: an IPv4 or IPv6 address,
    /// in its one written form (RFC 5952 for IPv6; an IPv4-mapped IPv6
    /// address as the IPv4 address it is), so that the limits counted per
    /// address see one address as one, however it was written.
    public static func checkAddress(_ text: String) -> Result<String, Refusal> {
        var v4 = in_addr()
        var v6 = in6_addr()
        guard text.utf8.count <= 45 else { return .failure(.notAnAddress) }
        if inet_pton(AF_INET, text, &v4) == 1 { return .success(written(AF_INET, &v4)) }
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return .failure(.notAnAddress) }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            withUnsafeMutableBytes(of: &v4) { $0.copyBytes(from: bytes[12..<16]) }
            return .success(written(AF_INET, &v4))
        }
        return .success(written(AF_INET6, &v6))
    }

    private static func written<Address>(_ family: Int32, _ address: inout Address) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = withUnsafeBytes(of: &address) { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `scalar` is not shown as itself: control (Cc), format (Cf),
    /// line or paragraph separator, private use, surrogate or unassigned,
    /// or one of the letters and symbols that draw nothing (``blanks``).
    /// The zero-width joiner and non-joiner are format characters that
    /// Persian and Indic writing and emoji sequences need, and hide nothing.
    public static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        if scalar == "\u{200C}" || scalar == "\u{200D}" { return false }
        if blanks.contains(scalar.value) { return true }
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate, .unassigned:
            return true
        default:
            return false
        }
    }

    /// Characters Unicode counts as letters, symbols or marks that draw
    /// nothing, so that a name padded with them looks blank: the Hangul
    /// fillers, the Braille blank, the combining grapheme joiner, and
    /// Khmer's two invisible vowels.
    static let blanks: Set<UInt32> = [0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x034F, 0x17B4, 0x17B5]

    /// `text` with every hidden character written out as `\u{…}` (and a
    /// backslash as `\\`), so that a terminal shows exactly what was sent
    /// and obeys none of it.
    public static func escaped(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if scalar == "\\" {
                result += "\\\\"
            } else if isHidden(scalar) {
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}

extension DisplayText.Refusal {
    /// A sentence naming the field and what is wrong with it.
    public func message(field: String) -> String {
        switch self {
        case .empty: "\(field) must not be empty"
        case .tooLong(let maximum): "\(field) may be at most \(maximum) characters"
        case .hiddenCharacter(let scalar, let offset):
            "\(field) holds a character that would not be shown as itself "
                + "(U+\(String(scalar.value, radix: 16, uppercase: true)) at \(offset)): "
                + "control, format and invisible characters are refused"
        case .notAnAddress: "\(field) must be an IPv4 or IPv6 address"
        case .stackedMarks(let offset):
            "\(field) stacks more than \(DisplayText.maxStackedMarks) combining marks on one character (at \(offset))"
        }
    }
}
