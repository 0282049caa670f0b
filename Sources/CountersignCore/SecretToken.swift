import Crypto
public import Foundation

/// Random secrets (API secrets, enrollment and requester tokens, nonces) and
/// the hashes the broker keeps instead of them.
public enum SecretToken {
    /// `bytes` random bytes from the CSPRNG, base64url-encoded.
    ///
    /// Drawn in one call (a random key of that size): a byte at a time,
    /// the system generator made one system call per byte.
    public static func generate(bytes: Int = 32) -> String {
        SymmetricKey(size: SymmetricKeySize(bitCount: bytes * 8)).withUnsafeBytes { Base64URL.encode($0) }
    }

    /// `count` symbols drawn uniformly from `alphabet` by the system CSPRNG.
    static func symbols(_ count: Int, from alphabet: [UInt8]) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }
    }

    /// SHA-256 of a secret. Every secret the broker stores has ≥128 bits of
    /// entropy, so a fast hash is enough: there is nothing to brute-force.
    public static func digest(_ secret: String) -> Data {
        Data(SHA256.hash(data: Data(secret.utf8)))
    }

    /// Compares two digests in time independent of where they differ.
    public static func constantTimeEquals(_ lhs: Data, _ rhs: Data) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(lhs, rhs) { difference |= a ^ b }
        return difference == 0
    }
}
