import Crypto
public import Foundation

/// A webhook signing secret as Standard Webhooks writes it: `whsec_`
/// and the key's bytes in base64.
public struct WebhookSecret: Sendable, Equatable {
    /// The HMAC key.
    public let key: Data

    /// The prefix every secret is shown with.
    public static let prefix = "whsec_"

    public init(key: Data) {
        self.key = key
    }

    /// A secret as shown to the receiver's operator; nil unless it is
    /// `whsec_` and base64 of 24 to 64 bytes (the specification's range).
    public init?(_ text: String) {
        guard text.hasPrefix(Self.prefix), let key = Data(base64Encoded: String(text.dropFirst(Self.prefix.count))),
            (24...64).contains(key.count)
        else { return nil }
        self.key = key
    }

    /// A new secret of 32 random bytes from the CSPRNG.
    public static func generate() -> WebhookSecret {
        WebhookSecret(key: SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) })
    }

    /// `whsec_` and the key in base64.
    public var text: String { Self.prefix + key.base64EncodedString() }
}
