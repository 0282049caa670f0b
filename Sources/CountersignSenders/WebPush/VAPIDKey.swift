import CountersignCore
import Crypto
public import Foundation
import JWTKit

/// One of the broker's VAPID keys (RFC 8292): it signs a short-lived JWT on
/// every push, so a push service can tell the subscription's own
/// application server from anybody else who learned the endpoint.
public struct VAPIDKey: Sendable {
    /// The id the store keeps it under; subscriptions name the key they were made for.
    public let id: String
    let key: P256.Signing.PrivateKey

    public init(id: String, pem: String) throws {
        self.id = id
        key = try P256.Signing.PrivateKey(pemRepresentation: pem)
    }

    /// A new key, as PKCS#8 PEM.
    public static func newPEM() -> String { P256.Signing.PrivateKey().pemRepresentation }

    /// The public key as browsers take it for `applicationServerKey`:
    /// the uncompressed point, base64url.
    public var publicKey: String { Base64URL.encode(key.publicKey.x963Representation) }

    /// How long a token is good for: RFC 8292 allows up to 24 hours; an
    /// hour is plenty for a message that is sent at once.
    public static let tokenLifetime: TimeInterval = 3600

    /// Plain values, not jwt-kit's claim types: its dates encode as
    /// fractional seconds, and push services parse `exp` as an integer.
    struct Claims: JWTPayload {
        var aud: String
        var exp: Int
        var sub: String
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// The `Authorization` header for a push to a service at `audience`
    /// (the endpoint's origin), naming `contact` as whom to reach.
    public func authorization(audience: String, contact: String, now: Date) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(backing: key))
        let token = try await keys.sign(
            Claims(aud: audience, exp: Int((now + Self.tokenLifetime).timeIntervalSince1970), sub: contact),
            header: ["typ": "JWT"])
        // No space after the comma: RFC 7235 allows one, but some push
        // services and libraries split on the bare comma.
        return "vapid t=\(token),k=\(publicKey)"
    }
}
