import CountersignCore
import CountersignSenders
import CountersignStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// This instance's one delivery worker: it claims due messages from the
/// store's outbox, attempts each, and records how it went. Instances
/// sharing a store each run one; the store's claims keep any message with
/// one of them at a time, so each is sent once per attempt.
///
/// Attempts run side by side, up to ``maxInFlight``, and a freed slot is
/// filled at once: a receiver that is slow to answer holds one slot for at
/// most an attempt's deadline, never the others, and no receiver (a push
/// service, an app's server) holds more than
/// ``OutboxMessage/attemptsPerReceiver`` of them (one that never answers,
/// with a backlog, cannot take them all while other receivers' messages
/// wait behind its own). The worker is rung
/// (``WakeKey/outbox``) when this instance queues a message or an attempt
/// ends, and looks every ``pollInterval`` for retries that came due,
/// messages other instances queued, and events that expired (their
/// `event.expired` webhooks). Nothing here runs on a request's path.
struct OutboxWorker: Service {
    let environment: BrokerEnvironment
    let push: PushSettings?
    let webhooks: StandardWebhookSender
    let cibaPings: CIBANotificationSender
    let logger: Logger
    /// How long a claimed message is nobody else's: more than the longest
    /// an attempt takes (``WebPushSender/attemptDeadline``,
    /// ``StandardWebhookSender/attemptDeadline``), so an instance
    /// that dies mid-attempt delays its messages by this much at most.
    var lease: TimeInterval = 25
    var maxInFlight = 64
    var perReceiver = OutboxMessage.attemptsPerReceiver
    var pollInterval: Duration = .seconds(1)

    func run() async throws {
        let inFlight = AttemptCount(metrics: environment.metrics)
        var lastSweep: ContinuousClock.Instant? = nil
        await withDiscardingTaskGroup { group in
            while !Task.isShuttingDownGracefully, !Task.isCancelled {
                let bell = environment.hub.subscribe([WakeKey.outbox])
                if lastSweep.map({ ContinuousClock.now - $0 >= pollInterval }) ?? true {
                    lastSweep = ContinuousClock.now
                    await announceExpiries()
                }
                let room = maxInFlight - inFlight.current
                guard room > 0 else {
                    await bell.wait(timeout: pollInterval)
                    continue
                }
                let claimed: [ClaimedOutboxMessage]
                let share = OutboxShare(perReceiver: perReceiver, inFlight: inFlight.byReceiver)
                do {
                    claimed = try await environment.store.claimOutboxMessages(
                        limit: room, lease: lease, claim: SecretToken.generate(bytes: 16), now: environment.now(),
                        share: share)
                } catch {
                    logger.warning("could not read the outbox", metadata: ["error": "\(error)"])
                    await bell.wait(timeout: .seconds(5))
                    continue
                }
                for message in claimed {
                    inFlight.add(1, message.message)
                    group.addTask {
                        await deliver(message)
                        inFlight.add(-1, message.message)
                        environment.hub.notify(WakeKey.outbox)
                    }
                }
                // Everything due was taken: wait for more, or a freed slot.
                // A receiver that reached its share may have left others'
                // messages behind its own: those are claimed at once.
                let filled = Set(claimed.map(\.message.receiver)).contains {
                    inFlight.count(for: $0) >= perReceiver
                }
                if claimed.count < room, !filled { await bell.wait(timeout: pollInterval) }
            }
            // Attempts under way finish (each within its deadline) before the
            // store closes.
        }
    }

    /// Writes the `event.expired` webhooks of events whose window just ran
    /// out (a change no request makes: the clock does); the messages are
    /// then claimed as any others.
    private func announceExpiries() async {
        do {
            while try await environment.store.announceExpiredEvents(now: environment.now(), limit: 100) == 100 {}
        } catch {
            logger.warning("could not announce expired events", metadata: ["error": "\(error)"])
        }
    }

    private func deliver(_ claimed: ClaimedOutboxMessage) async {
        let message = claimed.message
        let outcome: OutboxOutcome
        do {
            outcome = try await attempt(message)
        } catch {
            outcome = message.afterFailedAttempt(
                reason: "the broker could not attempt it: \(error)", now: environment.now())
        }
        let now = environment.now()
        do {
            try await environment.store.finishOutboxAttempt(
                id: message.id, claim: claimed.claim, outcome: outcome, now: now)
        } catch {
            // The lease ran out and another worker holds the message: its
            // record stands. A delivered message may then go out twice,
            // which at-least-once allows (the id lets a receiver tell).
            logger.warning(
                "could not record an outbox attempt", metadata: ["message": "\(message.id)", "error": "\(error)"])
            return
        }
        environment.metrics.outboxAttempted(message, outcome: outcome, now: now)
        switch outcome {
        case .delivered, .cancelled: break
        case .retry(let at, let reason):
            logger.info(
                "outbox message will be retried",
                metadata: ["message": "\(message.id)", "at": "\(at.formatted(.iso8601))", "reason": "\(reason)"])
        case .failed(let reason):
            logger.warning("outbox message failed", metadata: ["message": "\(message.id)", "reason": "\(reason)"])
        }
    }

    private func attempt(_ message: OutboxMessage) async throws -> OutboxOutcome {
        guard message.deliverUntil > environment.now() else {
            return .failed(reason: "out of time before it could be sent")
        }
        switch message.kind {
        case .webPush:
            guard let push else { return .failed(reason: "this broker has no Web Push set up") }
            return try await WebPushDelivery(environment: environment, push: push).attempt(message)
        case .webhook:
            return try await WebhookDelivery(environment: environment, sender: webhooks).attempt(message)
        case .cibaPing:
            return try await CIBAPingDelivery(environment: environment, sender: cibaPings).attempt(message)
        case .mail:
            return try await MailDelivery(environment: environment).attempt(message)
        }
    }
}

/// The attempts under way, shared with the tasks that make them, and
/// shown by kind in the metrics.
private final class AttemptCount: Sendable {
    private struct Counts {
        var total = 0
        var byReceiver: [String: Int] = [:]
        var byKind: [OutboxMessage.Kind: Int] = [:]
    }

    private let counts = Mutex(Counts())
    private let metrics: BrokerMetrics

    init(metrics: BrokerMetrics) { self.metrics = metrics }

    var current: Int { counts.withLock { $0.total } }
    var byReceiver: [String: Int] { counts.withLock { $0.byReceiver } }
    func count(for receiver: String) -> Int {
        counts.withLock { $0.byReceiver[receiver] ?? 0 }
    }

    /// Counts an attempt of `message` begun (1) or ended (-1).
    func add(_ change: Int, _ message: OutboxMessage) {
        counts.withLock { counts in
            counts.total += change
            let count = (counts.byReceiver[message.receiver] ?? 0) + change
            counts.byReceiver[message.receiver] = count > 0 ? count : nil
            let ofKind = (counts.byKind[message.kind] ?? 0) + change
            counts.byKind[message.kind] = ofKind
            // Under the lock, so that the gauge's last value is the count's.
            metrics.outboxInFlight(message.kind, ofKind)
        }
    }
}
