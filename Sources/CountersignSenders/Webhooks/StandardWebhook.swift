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

    /// A new secret of 32 random bytes.
    public static func generate() -> WebhookSecret {
        WebhookSecret(key: Data((0..<32).map { _ in UInt8.random(in: 0...255) }))
    }

    /// `whsec_` and the key in base64.
    public var text: String { Self.prefix + key.base64EncodedString() }
}

/// Signing a webhook message as the Standard Webhooks specification says:
/// `webhook-signature: v1,BASE64(HMAC-SHA256(key, id "." timestamp "." body))`,
/// one signature per secret, separated by spaces, so that a receiver
/// holding either the old or the new secret during a rotation accepts it.
public enum StandardWebhook {
    /// The `webhook-signature` value for a message signed with `secrets`.
    public static func signature(id: String, timestamp: Int, body: Data, secrets: [WebhookSecret]) -> String {
        var signed = Data("\(id).\(timestamp).".utf8)
        signed.append(body)
        return secrets.map { secret in
            let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: secret.key))
            return "v1," + Data(mac).base64EncodedString()
        }.joined(separator: " ")
    }

    /// The three headers of a message.
    public static func headers(id: String, timestamp: Int, body: Data, secrets: [WebhookSecret]) -> [(String, String)] {
        [
            ("webhook-id", id), ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", signature(id: id, timestamp: timestamp, body: body, secrets: secrets)),
        ]
    }
}
