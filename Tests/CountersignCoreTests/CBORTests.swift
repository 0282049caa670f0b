import CountersignCore
import Foundation
import Testing

/// The CBOR reader meets what an attacker can put in a passkey's fields.
@Suite("CBOR: the WebAuthn subset, and nothing else")
struct CBORTests {
    @Test("a COSE key: integers of both signs as keys, byte strings as values")
    func coseKey() throws {
        let x = Data(repeating: 0xAB, count: 32)
        // {1: 2, 3: -7, -1: 1, -2: h'AB…'}
        let bytes = Data([0xA4, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]) + x
        let key = try CBOR.decode(bytes)
        #expect(key[1]?.integer == 2 && key[3]?.integer == -7 && key[-1]?.integer == 1)
        #expect(key[-2] == .bytes(x))
        #expect(key[-3] == nil)
    }

    static let refusals: [(String, [UInt8])] = [
        ("a byte string claiming 2^64-1 bytes", [0x5B] + [UInt8](repeating: 0xFF, count: 8)),
        ("an array claiming 2^32 items", [0x9A, 0xFF, 0xFF, 0xFF, 0xFF]),
        ("a map cut short", [0xA2, 0x01, 0x02, 0x03]),
        ("nesting 100 deep", [UInt8](repeating: 0x81, count: 100) + [0x00]),
        ("an indefinite-length array", [0x9F, 0x01, 0xFF]),
        ("a tag", [0xC0, 0x61, 0x61]),
        ("a half float", [0xF9, 0x3C, 0x00]),
        ("a map repeating its key", [0xA2, 0x01, 0x02, 0x01, 0x03]),
        ("a text string that is not UTF-8", [0x62, 0xC3, 0x28]),
        ("bytes after the item", [0x01, 0x02]),
        ("nothing", []),
        ("a head that promises an 8-byte argument and ends", [0x1B, 0x01]),
    ]

    @Test("refused without reading past the data or recursing without end", arguments: Self.refusals)
    func refused(_ name: String, _ bytes: [UInt8]) {
        #expect(throws: ProtocolError(.malformed, ""), "\(name)") { try CBOR.decode(Data(bytes)) }
    }

    @Test("the length of an item that starts the data, as authenticator data needs it")
    func prefix() throws {
        let (item, length) = try CBOR.decodePrefix(Data([0x82, 0x01, 0x20, 0xFF, 0xFF]))
        #expect(item == .array([.unsigned(1), .negative(0)]) && length == 3)
        #expect(item.integer == nil && CBOR.negative(0).integer == -1)
    }
}
