public import CountersignCore
import Crypto
public import Foundation

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
