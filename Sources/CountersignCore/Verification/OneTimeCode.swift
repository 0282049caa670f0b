import Crypto
public import Foundation

/// Numeric one-time codes sent to an email address or phone number.
public enum OneTimeCode {
    /// `digits` uniformly random decimal digits from the system CSPRNG.
    public static func generate(digits: Int = 6) -> String {
        String(decoding: SecretToken.symbols(digits, from: Array("0123456789".utf8)), as: UTF8.self)
    }

    /// The digest stored instead of the code, bound to its challenge so a
    /// code is worth nothing for any other challenge.
    public static func digest(_ code: String, challengeID: String) -> Data {
        Data(SHA256.hash(data: Data("\(challengeID)\u{0}\(code)".utf8)))
    }
}
