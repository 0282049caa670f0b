public import Foundation

extension CBOR {
    /// The item written as CBOR (RFC 8949) with definite lengths and the
    /// shortest head for every argument (§4.2.1's preferred serialization),
    /// which is what CTAP2 sends and ``decode(_:)`` reads. Map pairs are
    /// written in the order given: a caller that needs CTAP2's canonical key
    /// order gives them in that order.
    ///
    /// Written for the attestation object the agent builds around a
    /// security key's authenticator data (`{"fmt", "attStmt", "authData"}`).
    public var encoded: Data {
        var bytes: [UInt8] = []
        append(to: &bytes)
        return Data(bytes)
    }

    private func append(to bytes: inout [UInt8]) {
        switch self {
        case .unsigned(let value): Self.head(0, value, to: &bytes)
        case .negative(let value): Self.head(1, value, to: &bytes)
        case .bytes(let data):
            Self.head(2, UInt64(data.count), to: &bytes)
            bytes.append(contentsOf: data)
        case .text(let text):
            let utf8 = Array(text.utf8)
            Self.head(3, UInt64(utf8.count), to: &bytes)
            bytes.append(contentsOf: utf8)
        case .array(let items):
            Self.head(4, UInt64(items.count), to: &bytes)
            for item in items { item.append(to: &bytes) }
        case .map(let pairs):
            Self.head(5, UInt64(pairs.count), to: &bytes)
            for pair in pairs {
                pair.key.append(to: &bytes)
                pair.value.append(to: &bytes)
            }
        case .bool(let value): bytes.append(value ? 0xF5 : 0xF4)
        case .null: bytes.append(0xF6)
        }
    }

    /// A head of major type `major` with `argument` in the fewest bytes.
    private static func head(_ major: UInt8, _ argument: UInt64, to bytes: inout [UInt8]) {
        let type = major << 5
        let width: Int
        switch argument {
        case 0..<24:
            bytes.append(type | UInt8(argument))
            return
        case 24...0xFF: width = 1
        case 0x100...0xFFFF: width = 2
        case 0x1_0000...0xFFFF_FFFF: width = 4
        default: width = 8
        }
        bytes.append(type | (24 + UInt8(width.trailingZeroBitCount)))
        for index in (0..<width).reversed() { bytes.append(UInt8(truncatingIfNeeded: argument >> (8 * index))) }
    }
}

extension CBOR.Pair {
    /// A key and its value, for a map to write.
    public init(_ key: CBOR, _ value: CBOR) {
        self.init(key: key, value: value)
    }
}
