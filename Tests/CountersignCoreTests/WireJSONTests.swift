import CountersignCore
import Crypto
import Foundation
import Testing

/// The documents that write their own JSON write exactly what the
/// `Encodable` path would, byte for byte.
@Suite("wire JSON")
struct WireJSONTests {
    /// SplitMix64: the same documents on every run.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Characters JSON treats specially, and some it must leave alone.
    static let alphabet: [Character] = [
        "a", "Z", "0", " ", "\"", "\\", "/", "\u{0}", "\u{1}", "\u{8}", "\t", "\n", "\u{B}", "\u{C}", "\r", "\u{1F}",
        "\u{7F}", "é", "ß", "\u{2028}", "\u{2029}", "€", "😀", "<", ">", "&", "'", "+", "=",
    ]

    static func string(_ rng: inout Seeded) -> String {
        String((0..<Int.random(in: 0...12, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
    }

    static func optional<T>(_ rng: inout Seeded, _ make: (inout Seeded) -> T) -> T? {
        Bool.random(using: &rng) ? make(&rng) : nil
    }

    /// Dates around now and far from it, on and next to millisecond edges.
    static func date(_ rng: inout Seeded) -> Date {
        let seconds = Double(Int64.random(in: -2_000_000_000...7_000_000_000, using: &rng))
        let fraction: Double =
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: 0
            case 1: Double(Int.random(in: 0..<1000, using: &rng)) / 1000
            case 2:
                (Double(Int.random(in: 0..<1000, using: &rng))
                    + [0.0004, 0.0005, 0.9995][Int.random(in: 0..<3, using: &rng)]) / 1000
            default: Double.random(in: 0..<1, using: &rng)
            }
        return Date(timeIntervalSince1970: seconds + fraction)
    }

    static func event(_ rng: inout Seeded) -> EventDocument {
        let status = EventStatus.allCases.randomElement(using: &rng)!
        let event = ApprovalEvent(
            id: string(&rng), createdAt: date(&rng), updatedAt: date(&rng), issuer: string(&rng),
            clientUserID: string(&rng), name: string(&rng), ip: string(&rng), location: string(&rng),
            method: Bool.random(using: &rng) ? .trustedDevice : .totp, storedStatus: status, expiresAt: date(&rng),
            details: optional(&rng, string), requesterName: optional(&rng, string), nonce: string(&rng),
            matchNumber: nil, wrongMatches: Int.random(in: 0...1, using: &rng), requesterTokenDigest: nil,
            decidedBy: optional(&rng, string), decidedAt: optional(&rng, date), decision: optional(&rng, string),
            withdrawnAt: optional(&rng, date))
        return EventDocument(event, now: date(&rng), signature: optional(&rng, string))
    }

    func expectSame(_ document: some Encodable & WireJSONWritable) throws {
        let encoded = String(decoding: try WireCoding.encoder().encode(document), as: UTF8.self)
        #expect(String(decoding: document.wireJSON(), as: UTF8.self) == encoded)
    }

    @Test("event documents and tickets")
    func events() throws {
        var rng = Seeded(state: 1)
        for _ in 0..<2000 {
            let document = Self.event(&rng)
            try expectSame(document)
            try expectSame(
                EventTicket(
                    event: document, requesterToken: Self.optional(&rng, Self.string),
                    matchNumber: Self.optional(&rng, Self.string)))
        }
    }

    struct Inbox: Encodable, WireJSONWritable {
        let events: [InboxItem]
        func write(to object: inout WireJSON.Object) { object.field("events", events) }
    }

    @Test("inbox items, with and without a device to pair, in lists of 0 to 3")
    func inbox() throws {
        var rng = Seeded(state: 2)
        for _ in 0..<500 {
            let items = (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                InboxItem(
                    event: Self.event(&rng), app: Self.string(&rng), nonce: Self.string(&rng),
                    matchRequired: Bool.random(using: &rng),
                    newDevice: Bool.random(using: &rng)
                        ? NewDeviceSummary(
                            NewDevice(
                                publicKey: DevicePublicKey(P256.Signing.PrivateKey().publicKey),
                                name: Self.string(&rng), type: Self.string(&rng)))
                        : nil)
            }
            try expectSame(Inbox(events: items))
        }
    }

    struct Stamp: Encodable, WireJSONWritable {
        let at: Date
        func write(to object: inout WireJSON.Object) { object.field("at", at) }
    }

    @Test("dates: RFC 3339 in UTC with the milliseconds truncated, as Foundation writes them")
    func dates() throws {
        var rng = Seeded(state: 3)
        for _ in 0..<50_000 { try expectSame(Stamp(at: Self.date(&rng))) }
        for seconds in [0.0, -0.5, -1.0005, 951_782_400, 1_795_000_000.9996, 4_107_542_399.999, 253_402_300_799.999] {
            try expectSame(Stamp(at: Date(timeIntervalSince1970: seconds)))
        }
    }

    @Test("passkey documents, as the device webhooks carry them")
    func passkeys() throws {
        var rng = Seeded(state: 4)
        for _ in 0..<200 {
            try expectSame(
                PasskeyDocument(
                    Passkey(
                        credentialID: Self.string(&rng),
                        publicKey: DevicePublicKey(P256.Signing.PrivateKey().publicKey),
                        signCount: UInt32.random(in: 0...UInt32.max, using: &rng), aaguid: UUID(),
                        transports: [Self.string(&rng)], backupEligible: Bool.random(using: &rng),
                        createdAt: Self.date(&rng))))
        }
    }
}

@Suite("CSV export fields")
struct CSVFieldTests {
    @Test("quoted as RFC 4180 asks, formulas shown as text")
    func escaping() {
        #expect(CSVField.escape("alice") == "alice")
        #expect(CSVField.escape("a,b") == "\"a,b\"")
        #expect(CSVField.escape("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(CSVField.escape("two\nlines") == "\"two\nlines\"")
        #expect(CSVField.escape("=HYPERLINK(\"http://x\")") == "\"'=HYPERLINK(\"\"http://x\"\")\"")
        for start in ["+1", "-1", "@SUM(A1)", "\tx"] { #expect(CSVField.escape(start) == "'" + start) }
        #expect(CSVField.escape("") == "")
        #expect(CSVField.line(["a", "b,c", ""]) == "a,\"b,c\",\r\n")
    }
}
