import CountersignCore
import Foundation
import Testing

/// The CBOR writer: what it writes, Core's reader reads back, in the
/// shortest form RFC 8949 §4.2.1 prefers.
@Suite("CBOR: writing what the reader reads")
struct CBOREncodingTests {
    @Test("an attestation object with fmt none: the bytes a browser's authenticator sends")
    func attestationObject() throws {
        let authData = Data((0..<164).map { UInt8($0 & 0xFF) })
        let object = CBOR.map([
            .init(.text("fmt"), .text("none")), .init(.text("attStmt"), .map([])),
            .init(.text("authData"), .bytes(authData)),
        ])
        // Written out by hand as TestAuthenticator (and the spec's examples) have it.
        var expected = Data([0xA3, 0x63]) + Data("fmt".utf8) + Data([0x64]) + Data("none".utf8)
        expected += Data([0x67]) + Data("attStmt".utf8) + Data([0xA0, 0x68]) + Data("authData".utf8)
        expected += Data([0x58, 164]) + authData
        #expect(object.encoded == expected)
        #expect(try CBOR.decode(object.encoded) == object)
    }

    static let heads: [(UInt64, [UInt8])] = [
        (0, [0x00]), (23, [0x17]), (24, [0x18, 0x18]), (255, [0x18, 0xFF]), (256, [0x19, 0x01, 0x00]),
        (65535, [0x19, 0xFF, 0xFF]), (65536, [0x1A, 0x00, 0x01, 0x00, 0x00]),
        (UInt64(UInt32.max), [0x1A, 0xFF, 0xFF, 0xFF, 0xFF]),
        (UInt64(UInt32.max) + 1, [0x1B, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00]),
        (UInt64.max, [0x1B] + [UInt8](repeating: 0xFF, count: 8)),
    ]

    @Test("each argument in the fewest bytes, at every width's edge", arguments: Self.heads)
    func head(_ value: UInt64, _ bytes: [UInt8]) throws {
        #expect(CBOR.unsigned(value).encoded == Data(bytes))
        #expect(try CBOR.decode(Data(bytes)) == .unsigned(value))
        // The same head under the negative major type (1).
        let negative = [bytes[0] | 0x20] + bytes.dropFirst()
        #expect(CBOR.negative(value).encoded == Data(negative))
    }

    @Test("every kind of item the reader takes comes back as written")
    func roundTrip() throws {
        let items: [CBOR] = [
            .unsigned(1), .negative(6), .bytes(Data()), .bytes(Data(repeating: 7, count: 300)), .text(""),
            .text("été ✓"), .array([]), .array([.unsigned(1), .array([.null, .bool(true), .bool(false)])]),
            // A COSE key: {1: 2, 3: -7, -1: 1, -2: x, -3: y}.
            .map([
                .init(.unsigned(1), .unsigned(2)), .init(.unsigned(3), .negative(6)),
                .init(.negative(0), .unsigned(1)), .init(.negative(1), .bytes(Data(repeating: 0xAB, count: 32))),
                .init(.negative(2), .bytes(Data(repeating: 0xCD, count: 32))),
            ]),
            .text(String(repeating: "a", count: 70_000)),
        ]
        for item in items {
            #expect(try CBOR.decode(item.encoded) == item)
        }
        #expect(CBOR.map([.init(.text("a"), .null)]).encoded == Data([0xA1, 0x61, 0x61, 0xF6]))
    }
}
