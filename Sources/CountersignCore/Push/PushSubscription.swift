import Crypto
public import Foundation

/// Where a device's notifications go: a Web Push subscription (RFC 8030)
/// as a browser's PushManager or a UnifiedPush distributor hands it out,
/// with the keys its messages are encrypted to (RFC 8291).
public struct PushSubscription: Sendable, Equatable {
    /// The push service's URL for this subscription; a capability, never shown.
    public var endpoint: String
    /// The subscriber's P-256 public key, uncompressed (65 bytes).
    public var p256dh: Data
    /// The subscriber's authentication secret (16 bytes).
    public var auth: Data
    /// The broker VAPID key the subscription was made for: push services
    /// bind a subscription to the application server key given at subscribe
    /// time, so every message to it is signed with that key.
    public var vapidKeyID: String
    public var updatedAt: Date

    public init(endpoint: String, p256dh: Data, auth: Data, vapidKeyID: String, updatedAt: Date) {
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
        self.vapidKeyID = vapidKeyID
        self.updatedAt = updatedAt
    }

    /// The longest endpoint taken; push services' URLs are well under it.
    public static let maxEndpointLength = 1024

    /// A subscription from what a client sent, or the reason it is refused:
    /// an `https` endpoint (`http` only with `allowHTTP`, for a push service
    /// on loopback) with no user, password or fragment, a P-256 point and a
    /// 16-byte secret, both base64url.
    public static func validated(
        endpoint: String, p256dh: String, auth: String, vapidKeyID: String, allowHTTP: Bool, now: Date
    ) throws(ProtocolError) -> PushSubscription {
        guard endpoint.utf8.count <= maxEndpointLength,
            !endpoint.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7F }),
            let url = URLComponents(string: endpoint), let host = url.host, !host.isEmpty
        else {
            throw ProtocolError(
                .malformed, "endpoint must be an absolute URL of at most \(maxEndpointLength) characters")
        }
        guard url.scheme == "https" || (allowHTTP && url.scheme == "http") else {
            throw ProtocolError(.malformed, "endpoint must be an https URL")
        }
        guard url.user == nil, url.password == nil, url.fragment == nil else {
            throw ProtocolError(.malformed, "endpoint must not carry a user, a password or a fragment")
        }
        guard let key = Base64URL.decode(p256dh), key.count == 65,
            (try? P256.KeyAgreement.PublicKey(x963Representation: key)) != nil
        else {
            throw ProtocolError(.invalidKey, "keys.p256dh must be an uncompressed P-256 point, base64url")
        }
        guard let secret = Base64URL.decode(auth), secret.count == 16 else {
            throw ProtocolError(.invalidKey, "keys.auth must be 16 bytes, base64url")
        }
        return PushSubscription(endpoint: endpoint, p256dh: key, auth: secret, vapidKeyID: vapidKeyID, updatedAt: now)
    }

    /// The endpoint's origin (`scheme://host[:port]`), the VAPID audience.
    public var origin: String? {
        guard let url = URLComponents(string: endpoint), let scheme = url.scheme, let host = url.host else {
            return nil
        }
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(bracketed)" + (url.port.map { ":\($0)" } ?? "")
    }
}
