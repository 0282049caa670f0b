import CountersignCore
import CountersignSenders
import CountersignStore
import Foundation

/// One attempt at a push telling a device of a pending event. A push is
/// worth sending only while the event waits for an answer: once it is
/// decided, withdrawn or expired the message is cancelled, never sent late.
struct WebPushDelivery {
    let environment: BrokerEnvironment
    let push: PushSettings

    /// The messages announcing a new pending event: one per unrevoked
    /// device of the user with a push subscription.
    static func messages(for event: ApprovalEvent, app: String, devices: [TrustedDevice], now: Date)
        -> [OutboxMessage]
    {
        let payload = Data(PushNotice(for: event, app: app).wireJSON())
        return PushRules.recipients(of: devices).compactMap { device in
            device.push.map {
                OutboxMessage(
                    kind: .webPush, target: device.id, receiver: OutboxMessage.receiver(of: $0.endpoint),
                    eventID: event.id, payload: payload, createdAt: now, deliverUntil: event.expiresAt)
            }
        }
    }

    func attempt(_ message: OutboxMessage) async throws -> OutboxOutcome {
        let now = environment.now()
        var event: ApprovalEvent? = nil
        if let eventID = message.eventID { event = try await environment.store.event(id: eventID) }
        let device = try await environment.store.device(id: message.target)
        let subscription: PushSubscription
        let ttl: Int
        switch PushRules.attempt(event: event, device: device, now: now) {
        case .cancel(let reason): return .cancelled(reason: reason)
        case .send(let to, let left): (subscription, ttl) = (to, left)
        }
        guard let key = try await push.keys.key(id: subscription.vapidKeyID) else {
            return .failed(reason: "the subscription's VAPID key \(subscription.vapidKeyID) is gone")
        }
        switch await push.sender.send(message.payload, to: subscription, signedWith: key, ttl: ttl, now: now) {
        case .accepted:
            return .delivered
        case .gone(let reason):
            try await environment.store.removePushSubscription(
                deviceID: message.target, endpoint: subscription.endpoint)
            return .cancelled(reason: "subscription removed: \(reason)")
        case .refused(let reason):
            return .failed(reason: reason)
        case .retry(let reason, let retryAfter):
            return message.afterFailedAttempt(reason: reason, retryAfter: retryAfter, now: environment.now())
        }
    }
}
