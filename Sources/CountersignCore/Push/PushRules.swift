public import Foundation

/// Who hears of a pending event by push, and whether a queued push is still
/// worth sending: only while the event waits for an answer, to an unrevoked
/// device that still has a subscription.
public enum PushRules {
    /// The devices a new pending event is pushed to: the user's devices
    /// that can act with a push subscription.
    public static func recipients(of devices: [TrustedDevice]) -> [TrustedDevice] {
        devices.filter { $0.canAct && $0.push != nil }
    }

    /// What to do with a queued push at `now`.
    public enum Verdict: Equatable, Sendable {
        /// Send it to this subscription, to be kept by the push service at
        /// most `ttl` seconds (what the event has left).
        case send(PushSubscription, ttl: Int)
        /// Drop it, and why.
        case cancel(String)
    }

    /// The verdict on a push about `event` (nil: gone) to `device` (nil: gone).
    public static func attempt(event: ApprovalEvent?, device: TrustedDevice?, now: Date) -> Verdict {
        guard let event, event.status(at: now) == .pending else {
            return .cancel("the event no longer waits for an answer")
        }
        guard let device, device.revokedAt == nil, let subscription = device.push else {
            return .cancel("the device has no push subscription any more")
        }
        guard device.suspendedAt == nil else { return .cancel("the device is suspended") }
        return .send(subscription, ttl: Int(event.expiresAt.timeIntervalSince(now).rounded(.up)))
    }
}
