import CountersignCore
import CountersignSenders
import CountersignStore
import Foundation
import Hummingbird

/// Where a device wants to hear of new requests: its Web Push
/// subscription (a browser's PushManager, or a UnifiedPush distributor),
/// set and removed with a device proof; and the VAPID key to subscribe
/// with, which anyone may read.
struct PushController {
    let environment: BrokerEnvironment

    var deviceEndpoints: RouteCollection<DeviceRequestContext> {
        RouteCollection(context: DeviceRequestContext.self)
            .put("devices/self/push", use: subscribe)
            .delete("devices/self/push", use: unsubscribe)
    }

    /// The VAPID key, for `applicationServerKey`.
    struct VAPIDKeyDocument: Codable, Sendable {
        let keyID: String
        let publicKey: String
        enum CodingKeys: String, CodingKey {
            case keyID = "key_id"
            case publicKey = "public_key"
        }
    }

    @Sendable func vapidKey(_ request: Request, context: some RequestContext) async throws -> JSONBody<
        VAPIDKeyDocument
    > {
        let push = try settings()
        let key = try await push.keys.current()
        return JSONBody(
            VAPIDKeyDocument(keyID: key.id, publicKey: key.publicKey), headers: [.cacheControl: "no-cache"])
    }

    /// A subscription as `PushSubscription.toJSON()` gives it, and the
    /// VAPID key it was made with (the current one if left out).
    struct SubscribeRequest: Decodable {
        struct Keys: Decodable {
            let p256dh: String
            let auth: String
        }
        let endpoint: String
        let keys: Keys
        let vapidKeyID: String?
        enum CodingKeys: String, CodingKey {
            case endpoint, keys
            case vapidKeyID = "vapid_key_id"
        }
    }

    /// The calling device's subscription, replacing any it had.
    @Sendable func subscribe(_ request: Request, context: DeviceRequestContext) async throws -> JSONBody<
        DeviceDocument
    > {
        let push = try settings()
        let body = try await request.decodeJSON(SubscribeRequest.self, context: context)
        let key: VAPIDKey
        if let id = body.vapidKeyID {
            guard let named = try await push.keys.key(id: id) else {
                throw APIError.badRequest("vapid_key_id names no VAPID key of this broker")
            }
            key = named
        } else {
            key = try await push.keys.current()
        }
        let subscription: PushSubscription
        do {
            subscription = try PushSubscription.validated(
                endpoint: body.endpoint, p256dh: body.keys.p256dh, auth: body.keys.auth, vapidKeyID: key.id,
                allowHTTP: push.endpointGuard.allowPrivateAddresses, now: environment.now())
            try await push.endpointGuard.check(subscription.endpoint)
        } catch let error as ProtocolError {
            throw APIError.badRequest(error.message)
        } catch let error as SenderFailure {
            throw APIError.badRequest(error.description)
        } catch let error as EndpointGuard.Unresolved {
            throw APIError.badRequest(error.description)
        }
        try await environment.store.setPushSubscription(subscription, deviceID: context.device.id)
        var device = context.device
        device.push = subscription
        return JSONBody(DeviceDocument(device))
    }

    private func settings() throws -> PushSettings {
        guard let push = environment.push else {
            throw APIError(.serviceUnavailable, .pushDisabled, "this broker sends no push notifications")
        }
        return push
    }

    @Sendable func unsubscribe(_ request: Request, context: DeviceRequestContext) async throws -> JSONBody<
        DeviceDocument
    > {
        try await environment.store.setPushSubscription(nil, deviceID: context.device.id)
        var device = context.device
        device.push = nil
        return JSONBody(DeviceDocument(device))
    }
}
