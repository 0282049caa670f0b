public import Foundation

/// The part of CBOR (RFC 8949) that WebAuthn sends: an attestation object
/// and the COSE key inside authenticator data. Written here because no CBOR
/// library is among the packages this project builds with; it reads only
/// definite lengths (CTAP2's canonical form has no other), integers, byte
/// and text strings, arrays, maps and the simple values, and refuses the rest
/// (tags, floats, indefinite lengths) rather than guess.
public indirect enum CBOR: Sendable, Hashable {
    case unsigned(UInt64)
    /// The integer -1 - n.
    case negative(UInt64)
    case bytes(Data)
    case text(String)
    case array([CBOR])
    /// Pairs in the order sent.
    case map([Pair])
    case bool(Bool)
    case null

    /// A key and its value in a map.
    public struct Pair: Sendable, Hashable {
        public var key: CBOR
        public var value: CBOR
    }

    /// The value of an integer item, if it fits.
    public var integer: Int? {
        switch self {
        case .unsigned(let value): value <= UInt64(Int.max) ? Int(value) : nil
        case .negative(let value): value < UInt64(Int.max) ? -1 - Int(value) : nil
        default: nil
        }
    }

    /// The value under `key` in a map (the first, should a map repeat it).
    public subscript(key: CBOR) -> CBOR? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.key == key }?.value
    }

    /// The value under an integer key, as COSE keys use.
    public subscript(key: Int) -> CBOR? { self[key >= 0 ? .unsigned(UInt64(key)) : .negative(UInt64(-1 - key))] }

    /// The value under a text key, as attestation objects use.
    public subscript(key: String) -> CBOR? { self[.text(key)] }

    /// Reads one item from the start of `data`, and how many bytes it took.
    public static func decodePrefix(_ data: Data) throws(ProtocolError) -> (item: CBOR, length: Int) {
        var reader = Reader(bytes: [UInt8](data))
        let item = try reader.item(depth: 0)
        return (item, reader.offset)
    }

    /// Reads `data` as exactly one item.
    public static func decode(_ data: Data) throws(ProtocolError) -> CBOR {
        let (item, length) = try decodePrefix(data)
        guard length == data.count else { throw ProtocolError(.malformed, "bytes after the CBOR item") }
        return item
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        /// Nesting deeper than an attestation object's is refused.
        static let maximumDepth = 8

        mutating func take(_ count: Int) throws(ProtocolError) -> ArraySlice<UInt8> {
            guard count >= 0, count <= bytes.count - offset else {
                throw ProtocolError(.malformed, "the CBOR item is cut short")
            }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }

        /// The argument of a head whose additional information is `info`.
        mutating func argument(_ info: UInt8) throws(ProtocolError) -> UInt64 {
            switch info {
            case 0..<24: return UInt64(info)
            case 24, 25, 26, 27:
                let width = 1 << Int(info - 24)
                return try take(width).reduce(0) { $0 << 8 | UInt64($1) }
            default:
                throw ProtocolError(.malformed, "indefinite lengths and reserved CBOR heads are not accepted")
            }
        }

        mutating func length(_ info: UInt8) throws(ProtocolError) -> Int {
            let value = try argument(info)
            guard value <= UInt64(bytes.count - offset) else {
                throw ProtocolError(.malformed, "a CBOR length runs past the data")
            }
            return Int(value)
        }

        mutating func item(depth: Int) throws(ProtocolError) -> CBOR {
            guard depth <= Self.maximumDepth else { throw ProtocolError(.malformed, "CBOR nested too deeply") }
            let head = try take(1).first!
            let major = head >> 5
            let info = head & 0x1f
            switch major {
            case 0: return .unsigned(try argument(info))
            case 1: return .negative(try argument(info))
            case 2: return .bytes(Data(try take(try length(info))))
            case 3:
                guard let text = String(validating: try take(try length(info)), as: UTF8.self) else {
                    throw ProtocolError(.malformed, "a CBOR text string that is not UTF-8")
                }
                return .text(text)
            case 4:
                // Each item takes at least a byte: a count beyond what is
                // left is refused by length(_:) before anything is reserved.
                let count = try length(info)
                var items: [CBOR] = []
                for _ in 0..<count { items.append(try item(depth: depth + 1)) }
                return .array(items)
            case 5:
                let count = try length(info)
                var pairs: [Pair] = []
                // A set, not a search of the pairs so far: a map of 11,000
                // keys (44 KB) took 7.6 s of CPU to check that way.
                var seen: Set<CBOR> = []
                for _ in 0..<count {
                    let key = try item(depth: depth + 1)
                    guard seen.insert(key).inserted else {
                        throw ProtocolError(.malformed, "a CBOR map repeats a key")
                    }
                    pairs.append(Pair(key: key, value: try item(depth: depth + 1)))
                }
                return .map(pairs)
            case 7:
                switch info {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                default: throw ProtocolError(.malformed, "CBOR floats and other simple values are not accepted")
                }
            default:
                throw ProtocolError(.malformed, "CBOR tags are not accepted")
            }
        }
    }
}
