public import CountersignCore
import Foundation
import NIOHTTP1

/// A Web Push subscription as a push service or UnifiedPush distributor
/// hands it out: where to post, and the keys to encrypt to (base64url).
public struct PushEndpoint: Codable, Sendable, Equatable {
    public struct Keys: Codable, Sendable, Equatable {
        public var p256dh: String
        public var auth: String
    }
    public var endpoint: String
    public var keys: Keys
    /// The broker VAPID key the subscription was made with; nil for the current one.
    public var vapidKeyID: String?

    enum CodingKeys: String, CodingKey {
        case endpoint, keys
        case vapidKeyID = "vapid_key_id"
    }

    public init(endpoint: String, p256dh: String, auth: String, vapidKeyID: String? = nil) {
        self.endpoint = endpoint
        self.keys = Keys(p256dh: p256dh, auth: auth)
        self.vapidKeyID = vapidKeyID
    }
}

/// The broker's current VAPID key, to subscribe with.
public struct VAPIDKeyDocument: Codable, Sendable, Equatable {
    public var keyID: String
    /// The uncompressed P-256 point, base64url: `applicationServerKey`.
    public var publicKey: String

    enum CodingKeys: String, CodingKey {
        case keyID = "key_id"
        case publicKey = "public_key"
    }
}

extension CountersignClient {
    /// The key push subscriptions must be made for.
    public func vapidKey() async throws -> VAPIDKeyDocument {
        try await connection.send(.GET, "/api/v1/push/vapid-key", as: VAPIDKeyDocument.self)
    }

    /// Tells the broker to push this device's new requests to `endpoint`,
    /// replacing any subscription it had.
    public func subscribePush(_ endpoint: PushEndpoint, credential: DeviceCredential) async throws -> DeviceDocument {
        let path = "/api/v1/devices/self/push"
        return try await connection.send(
            .PUT, path, headers: [try await proofHeader(credential, .PUT, path)], body: endpoint,
            as: DeviceDocument.self)
    }

    /// Stops pushes to this device.
    public func unsubscribePush(credential: DeviceCredential) async throws -> DeviceDocument {
        let path = "/api/v1/devices/self/push"
        return try await connection.send(
            .DELETE, path, headers: [try await proofHeader(credential, .DELETE, path)], as: DeviceDocument.self)
    }
}
