import AsyncHTTPClient
import CountersignCore
import Crypto
public import Foundation
import NIOCore
import NIOHTTP1

/// Sends one-time codes as a JSON POST to an HTTPS endpoint, for SMS
/// providers (or mail services) bridged behind it.
///
/// Each request is signed: `Countersign-Signature: v1=HEX(HMAC-SHA256(secret,
/// TIMESTAMP + "." + BODY))` with `Countersign-Timestamp: TIMESTAMP` (Unix
/// seconds), so the receiver can check it came from this broker and is fresh.
public struct WebhookSender: CodeSender {
    let url: String
    let secret: SymmetricKey

    /// A sender posting to `url`, signing with `secret` (at least 32 bytes).
    public init(url: String, secret: Data) throws {
        guard let components = URLComponents(string: url), ["https", "http"].contains(components.scheme ?? ""),
            components.host?.isEmpty == false
        else {
            throw SenderSetupError("the webhook URL must be an absolute https URL: \(url)")
        }
        guard secret.count >= 32 else { throw SenderSetupError("the webhook secret must have at least 32 bytes") }
        self.url = url
        self.secret = SymmetricKey(data: secret)
    }

    /// The signature header value for `body` sent at `timestamp`.
    public static func signature(body: Data, timestamp: Int, secret: Data) -> String {
        var message = Data("\(timestamp).".utf8)
        message.append(body)
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret))
        return "v1=" + mac.map { String(format: "%02x", $0) }.joined()
    }

    struct Payload: Encodable {
        let type = "verification_code"
        let channel: String
        let to: String
        let code: String
        let app: String
        let message: String
    }

    public func send(_ message: CodeMessage) async throws {
        let payload = Payload(
            channel: message.type == .email ? "email" : "sms", to: message.identifier, code: message.code,
            app: message.app, message: message.text)
        let body = try JSONEncoder().encode(payload)
        let timestamp = Int(Date().timeIntervalSince1970)
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Countersign-Timestamp", value: String(timestamp))
        request.headers.add(
            name: "Countersign-Signature",
            value: Self.signature(body: body, timestamp: timestamp, secret: secret.withUnsafeBytes { Data($0) }))
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        _ = try? await response.body.collect(upTo: 64 * 1024)
        guard (200..<300).contains(response.status.code) else {
            throw SenderFailure("the webhook answered \(response.status.code)")
        }
    }
}

/// A code could not be handed to the delivery channel.
public struct SenderFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
