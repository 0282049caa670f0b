import Crypto
public import Foundation

/// Recovery codes: look-up secrets (NIST SP 800-63B §5.1.2) that let a user
/// who lost every trusted device enroll a new one.
///
/// Each has 25 symbols of Crockford's base32, 125 random bits, shown in five
/// groups of five. At ≥ 112 bits SP 800-63B allows a plain one-way hash, so
/// the broker keeps SHA-256 digests and finds a code by its digest.
public enum RecoveryCode {
    /// Codes in one set.
    public static let setSize = 10

    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    static let symbols = 25

    /// A new code from the system CSPRNG, such as `7KQ2M-…` (five groups).
    public static func generate() -> String {
        let characters = SecretToken.symbols(symbols, from: alphabet)
        return stride(from: 0, to: symbols, by: 5).map {
            String(decoding: characters[$0..<$0 + 5], as: UTF8.self)
        }.joined(separator: "-")
    }

    /// What a person typed in canonical form: upper case, without spaces
    /// or hyphens, with Crockford's look-alikes folded (O → 0, I and L → 1);
    /// nil if it cannot be a recovery code.
    public static func normalize(_ typed: String) -> String? {
        var symbols: [UInt8] = []
        for byte in typed.uppercased().utf8 where byte != UInt8(ascii: "-") && byte != UInt8(ascii: " ") {
            switch byte {
            case UInt8(ascii: "O"): symbols.append(UInt8(ascii: "0"))
            case UInt8(ascii: "I"), UInt8(ascii: "L"): symbols.append(UInt8(ascii: "1"))
            default:
                guard alphabet.contains(byte) else { return nil }
                symbols.append(byte)
            }
        }
        guard symbols.count == Self.symbols else { return nil }
        return String(decoding: symbols, as: UTF8.self)
    }

    /// The digest the broker stores; nil if `typed` cannot be a code.
    public static func digest(_ typed: String) -> Data? {
        normalize(typed).map { Data(SHA256.hash(data: Data("countersign-recovery\u{0}\($0)".utf8))) }
    }
}
