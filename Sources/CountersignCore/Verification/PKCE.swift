import Crypto
import Foundation

/// Proof Key for Code Exchange (RFC 7636), `S256` only: the `plain` method
/// would put the secret itself in the front channel.
public enum PKCE {
    /// The one method accepted.
    public static let method = "S256"

    /// Whether `verifier` is 43-128 characters of `[A-Za-z0-9-._~]` (RFC 7636 §4.1).
    public static func isValidVerifier(_ verifier: String) -> Bool {
        (43...128).contains(verifier.utf8.count) && verifier.utf8.allSatisfy(isUnreserved)
    }

    /// Whether `challenge` is the base64url of a SHA-256 digest: 43 characters.
    public static func isValidChallenge(_ challenge: String) -> Bool {
        challenge.utf8.count == 43 && Base64URL.decode(challenge)?.count == 32
    }

    /// `BASE64URL(SHA256(ASCII(verifier)))`.
    public static func challenge(for verifier: String) -> String {
        Base64URL.encode(SHA256.hash(data: Data(verifier.utf8)))
    }

    /// Whether `verifier` is well-formed and hashes to `challenge`, compared
    /// in constant time.
    public static func verify(verifier: String, challenge: String) -> Bool {
        guard isValidVerifier(verifier), isValidChallenge(challenge) else { return false }
        return SecretToken.constantTimeEquals(
            Data(self.challenge(for: verifier).utf8), Data(challenge.utf8))
    }

    /// A fresh verifier: 32 random bytes, base64url (43 characters).
    public static func newVerifier() -> String { SecretToken.generate(bytes: 32) }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
