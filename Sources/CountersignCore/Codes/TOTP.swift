public import Foundation

/// The TOTP parameters of every Countersign device (RFC 6238): 6 digits,
/// 30-second steps, HMAC-SHA-1, which is what authenticator apps expect.
public enum TOTPParameters {
    public static let digits = 6
    public static let period = 30

    /// The time step that contains `date`.
    public static func step(at date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / Double(period)).rounded(.down))
    }

    /// The steps whose codes the broker accepts at `date`: the current one
    /// and the one before it (docs/totp.md says why, and why not the next).
    public static func acceptedSteps(at date: Date) -> [Int64] {
        let current = step(at: date)
        return [current, current - 1]
    }

    /// Whole seconds until the step that contains `date` ends.
    public static func secondsLeft(at date: Date) -> Int {
        let elapsed = date.timeIntervalSince1970 - Double(step(at: date)) * Double(period)
        return max(1, Int((Double(period) - elapsed).rounded(.up)))
    }

    /// The moment a step starts, for computing its code.
    public static func start(of step: Int64) -> Date {
        Date(timeIntervalSince1970: Double(step) * Double(period))
    }

    /// Whether `code` is exactly six ASCII digits.
    public static func isWellFormed(_ code: String) -> Bool {
        code.utf8.count == digits && code.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}

/// A device's TOTP secret: 32 random characters of the RFC 4648 base32
/// alphabet, 160 random bits. The characters are the HMAC key (HummingbirdOTP
/// takes the key as text), so an `otpauth://` URI carries them base32-encoded
/// once more and any authenticator app computes the same codes.
public struct TOTPSecret: Sendable, Equatable, Codable, CustomStringConvertible {
    public let value: String

    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
    static let length = 32

    /// A secret from its text; nil unless it is 32 base32 characters.
    public init?(_ value: String) {
        guard value.utf8.count == Self.length, value.utf8.allSatisfy(Self.alphabet.contains) else { return nil }
        self.value = value
    }

    /// A new secret from the system CSPRNG.
    public static func generate() -> TOTPSecret {
        TOTPSecret(String(decoding: SecretToken.symbols(length, from: alphabet), as: UTF8.self))!
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let secret = TOTPSecret(text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "a TOTP secret is 32 base32 characters"))
        }
        self = secret
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    /// Never the secret itself, so it cannot reach a log by accident.
    public var description: String { "TOTPSecret(redacted)" }
}
