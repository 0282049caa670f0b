public import Foundation

/// Base64url without padding (RFC 4648 §5), the encoding every JOSE value and
/// every Countersign secret uses on the wire. Byte-level: every request
/// decodes several of these, so no detour through Foundation's strings.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The 6-bit value of each byte, 0xFF outside the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()

    /// Encodes bytes as unpadded base64url.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= input.count {
            let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            for shift in [18, 12, 6, 0] { output.append(alphabet[Int((chunk >> UInt32(shift)) & 0x3F)]) }
            index += 3
        }
        switch input.count - index {
        case 1:
            let chunk = UInt32(input[index]) << 16
            for shift in [18, 12] { output.append(alphabet[Int((chunk >> UInt32(shift)) & 0x3F)]) }
        case 2:
            let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            for shift in [18, 12, 6] { output.append(alphabet[Int((chunk >> UInt32(shift)) & 0x3F)]) }
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes unpadded base64url; returns nil for any character outside the
    /// alphabet, for padding, for an impossible length and for non-zero
    /// trailing bits, so that two different strings never decode to the
    /// same bytes.
    public static func decode(_ text: some StringProtocol) -> Data? {
        let utf8 = text.utf8
        guard utf8.count % 4 != 1 else { return nil }
        // Bytes into an array, then one Data: Data.append byte by byte goes
        // through its range-replacement machinery every time.
        var output: [UInt8] = []
        output.reserveCapacity(utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in utf8 {
            let value = values[Int(byte)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Non-canonical trailing bits: another string of the same bytes.
        guard accumulator == 0 else { return nil }
        return Data(output)
    }
}
