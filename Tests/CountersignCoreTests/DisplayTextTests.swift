import CountersignCore
import Testing

@Suite("text an approver reads")
struct DisplayTextTests {
    @Test("escape sequences, line breaks, bidi overrides and invisible characters are refused, naming where")
    func refused() {
        let hostile: [(String, Unicode.Scalar)] = [
            ("Pay \u{1B}[2K\rPay 1.00 EUR", "\u{1B}"), ("ok\n  event id:  ev_forged", "\n"), ("tab\there", "\t"),
            ("EUR \u{202E}00.001", "\u{202E}"), ("a\u{2066}b", "\u{2066}"), ("pay\u{200B}pal", "\u{200B}"),
            ("soft\u{00AD}hyphen", "\u{00AD}"), ("c1\u{9B}31m", "\u{9B}"), ("line\u{2028}sep", "\u{2028}"),
            ("private\u{E000}use", "\u{E000}"), ("bom\u{FEFF}", "\u{FEFF}"), ("nul\u{0}", "\u{0}"),
        ]
        for (text, scalar) in hostile {
            guard case .failure(.hiddenCharacter(let found, _)) = DisplayText.check(text, as: .details) else {
                Issue.record("accepted \(text.debugDescription)")
                continue
            }
            #expect(found == scalar, "\(text.debugDescription)")
        }
    }

    @Test(
        "lengths are counted in code points, as JSON Schema counts them; empty text is refused; surrounding white space is dropped"
    )
    func lengths() {
        #expect(
            DisplayText.check(String(repeating: "a", count: 128), as: .location)
                == .success(String(repeating: "a", count: 128)))
        #expect(
            DisplayText.check(String(repeating: "a", count: 129), as: .location) == .failure(.tooLong(maximum: 128)))
        #expect(
            DisplayText.check(String(repeating: "é", count: 129), as: .location) == .failure(.tooLong(maximum: 128)))
        #expect(
            DisplayText.check(String(repeating: "é", count: 128), as: .location)
                == .success(String(repeating: "é", count: 128)))
        #expect(
            DisplayText.check(String(repeating: "x", count: 40_000), as: .details) == .failure(.tooLong(maximum: 1024)))
        #expect(DisplayText.check("   ", as: .details) == .failure(.empty))
        #expect(DisplayText.check("  Berlin, DE \n", as: .location) == .success("Berlin, DE"))
    }

    @Test("ordinary text of any script is taken: accents, CJK, right-to-left, emoji with joiners")
    func accepted() {
        for text in [
            "Überweisung 12,00 € an Müller", "東京都", "طهران", "מחשב נייד", "👩‍💻 laptop", "می‌خواهم",
            "Pay 1.00 EUR to ACME (invoice #42)",
        ] {
            #expect(DisplayText.check(text, as: .details) == .success(text), "\(text)")
        }
    }

    @Test(
        "letters that draw nothing are refused; runs of spaces become one; more than four marks on a letter are refused"
    )
    func blanksAndPadding() {
        for blank in ["\u{3164}", "\u{115F}", "\u{1160}", "\u{FFA0}", "\u{2800}", "\u{034F}", "\u{17B4}"] {
            let text = "MacBook (10.0.0.7, Berlin) " + blank
            guard case .failure(.hiddenCharacter) = DisplayText.check(text, as: .requesterName) else {
                Issue.record("U+\(String(blank.unicodeScalars.first!.value, radix: 16)) was taken")
                continue
            }
        }
        let padded = "MacBook (10.0.0.7, Berlin)" + String(repeating: " ", count: 80) + "\u{00A0}\u{2003}x"
        #expect(DisplayText.check(padded, as: .requesterName) == .success("MacBook (10.0.0.7, Berlin) x"))
        #expect(DisplayText.check("Ti\u{1EBF}ng Vi\u{1EC7}t", as: .details) == .success("Ti\u{1EBF}ng Vi\u{1EC7}t"))
        let four = "a" + String(repeating: "\u{0301}", count: 4)
        #expect(DisplayText.check(four, as: .details) == .success(four), "four marks are writing")
        #expect(
            DisplayText.check("a" + String(repeating: "\u{0301}", count: 5) + "b", as: .details)
                == .failure(.stackedMarks(offset: 5)))
    }

    @Test("an address must be an IPv4 or IPv6 address, and is kept in its one written form")
    func addresses() {
        for good in ["192.0.2.7", "2001:db8::1", "::1", "fe80::a7:1"] {
            #expect(DisplayText.checkAddress(good) == .success(good))
        }
        // One address, one key for the limits counted per address.
        for (written, canonical) in [
            ("::ffff:192.0.2.7", "192.0.2.7"), ("::FFFF:192.0.2.7", "192.0.2.7"), ("::ffff:c000:207", "192.0.2.7"),
            ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"), ("0:0:0:0:0:0:0:1", "::1"),
        ] {
            #expect(DisplayText.checkAddress(written) == .success(canonical), "\(written)")
        }
        for bad in [
            "", "localhost", "192.0.2.7\u{1B}[31m", "1.2.3.4.5", "192.0.2.7 ", String(repeating: "1", count: 40_000),
        ] {
            #expect(DisplayText.checkAddress(bad) == .failure(.notAnAddress), "\(bad.prefix(20).debugDescription)")
        }
    }

    @Test("escaped text shows every hidden character as \\u{…} and obeys none; a backslash is doubled")
    func escaped() {
        #expect(DisplayText.escaped("a\u{1B}[31mb\nc\u{202E}d\\e") == #"a\u{1B}[31mb\u{A}c\u{202E}d\\e"#)
        #expect(DisplayText.escaped("plain 東京 👩‍💻") == "plain 東京 👩‍💻")
        let escaped = DisplayText.escaped(String((0...0x9F).compactMap { Unicode.Scalar($0).map(Character.init) }))
        #expect(!escaped.unicodeScalars.contains(where: DisplayText.isHidden))
    }
}
