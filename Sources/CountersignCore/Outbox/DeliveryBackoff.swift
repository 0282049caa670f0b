public import Foundation

/// When a message that was not delivered is tried again: exponential steps
/// from ``first`` up to ``longest``, each waited between half and all of its
/// length at random ("equal jitter"), so that many messages failed by one
/// outage do not come back in one burst; a receiver's `Retry-After` is
/// honoured. A message whose next attempt would fall after its deadline
/// fails instead.
public struct DeliveryBackoff: Sendable, Equatable {
    /// The first step.
    public var first: TimeInterval
    /// The longest step.
    public var longest: TimeInterval

    public init(first: TimeInterval, longest: TimeInterval) {
        self.first = first
        self.longest = longest
    }

    /// Pushes live only while their event is pending (a minute by
    /// default): 1 s, 2 s, 4 s, … at most 15 s apart.
    public static let push = DeliveryBackoff(first: 1, longest: 15)

    /// Webhooks live three days (``WebhookNotice/deliveryTime``): 5 s,
    /// 10 s, 20 s, … at most 6 hours apart, about 25 attempts in all.
    public static let webhook = DeliveryBackoff(first: 5, longest: 6 * 3600)

    /// The outcome of a failed attempt, the `attempts`-th. `jitter` is
    /// uniform in 0..<1 (injected, so that tests can pin it).
    public func afterFailure(
        attempts: Int, reason: String, retryAfter: TimeInterval? = nil, deliverUntil: Date, now: Date,
        jitter: Double = Double.random(in: 0..<1)
    ) -> OutboxOutcome {
        let step = min(longest, first * pow(2, Double(max(0, min(attempts - 1, 62)))))
        var delay = step / 2 + step / 2 * min(max(jitter, 0), 1)
        if let retryAfter, retryAfter.isFinite, retryAfter > delay { delay = retryAfter }
        let next = now + delay
        guard next < deliverUntil else {
            return .failed(reason: "gave up after \(attempts) attempt\(attempts == 1 ? "" : "s"): \(reason)")
        }
        return .retry(at: next, reason: reason)
    }
}
