import CoreMetrics
import CountersignCore
import CountersignStore
import Foundation
import Metrics
public import Prometheus
import Synchronization

/// What the broker counts, through swift-metrics: whatever backend the
/// process bootstrapped (Prometheus in `device-broker serve`, nothing in
/// tests that do not).
///
/// Make it after bootstrapping: the metrics a round trip touches are made
/// once, here, not per request.
public struct BrokerMetrics: Sendable {
    /// The registry `/metrics` shows; nil serves no metrics.
    public let registry: PrometheusCollectorRegistry?
    private let decisions: [String: CoreMetrics.Counter]
    /// By event name: the well-known names, and `other` for the names apps
    /// make up (one series per name would let any app grow /metrics
    /// without bound).
    private let creations: [String: CoreMetrics.Counter]
    private let wake = CoreMetrics.Timer(label: "countersign_decision_to_wake_seconds", preferredDisplayUnit: .seconds)
    private let inboxWake = CoreMetrics.Timer(
        label: "countersign_inbox_change_to_wake_seconds", preferredDisplayUnit: .seconds)
    private let held = CoreMetrics.Gauge(label: "countersign_long_polls_held")
    private let withdrawals = CoreMetrics.Counter(label: "countersign_events_withdrawn_total")
    private let storeMetrics = StoreMetrics()
    /// By kind, then by outcome (`queued` counts messages written).
    private let outbox: [OutboxMessage.Kind: [String: CoreMetrics.Counter]]
    private let outboxLatency: [OutboxMessage.Kind: CoreMetrics.Timer]
    private let outboxInFlight: [OutboxMessage.Kind: CoreMetrics.Gauge]
    /// RADIUS requests by what they were answered.
    private let radius: [RADIUSOutcome: CoreMetrics.Counter]
    private let directoryRead = CoreMetrics.Gauge(label: "countersign_directory_last_read_timestamp_seconds")
    private let directoryFailures = CoreMetrics.Counter(label: "countersign_directory_read_failures_total")

    public init(registry: PrometheusCollectorRegistry? = nil) {
        self.registry = registry
        var decisions: [String: CoreMetrics.Counter] = [:]
        for outcome in [EventStatus.approved, .rejected] {
            for method in [AuthMethod.trustedDevice, .totp] {
                decisions[Self.key(outcome, method)] = CoreMetrics.Counter(
                    label: "countersign_events_decided_total",
                    dimensions: [("outcome", outcome.rawValue), ("method", method.rawValue)])
            }
        }
        self.decisions = decisions
        var creations: [String: CoreMetrics.Counter] = [:]
        for name in Self.eventLabels {
            creations[name] = CoreMetrics.Counter(
                label: "countersign_events_created_total", dimensions: [("event", name)])
        }
        self.creations = creations
        var outbox: [OutboxMessage.Kind: [String: CoreMetrics.Counter]] = [:]
        var outboxLatency: [OutboxMessage.Kind: CoreMetrics.Timer] = [:]
        var outboxInFlight: [OutboxMessage.Kind: CoreMetrics.Gauge] = [:]
        for kind in OutboxMessage.Kind.allCases {
            outbox[kind] = Dictionary(
                uniqueKeysWithValues: Self.outboxOutcomes.map {
                    (
                        $0,
                        CoreMetrics.Counter(
                            label: "countersign_outbox_messages_total",
                            dimensions: [("kind", kind.rawValue), ("outcome", $0)])
                    )
                })
            outboxLatency[kind] = CoreMetrics.Timer(
                label: "countersign_outbox_delivery_seconds", dimensions: [("kind", kind.rawValue)],
                preferredDisplayUnit: .seconds)
            outboxInFlight[kind] = CoreMetrics.Gauge(
                label: "countersign_outbox_attempts_in_flight", dimensions: [("kind", kind.rawValue)])
            outboxInFlight[kind]?.record(0)
        }
        self.outbox = outbox
        self.outboxLatency = outboxLatency
        self.outboxInFlight = outboxInFlight
        self.radius = Dictionary(
            uniqueKeysWithValues: RADIUSOutcome.allCases.map {
                (
                    $0,
                    CoreMetrics.Counter(
                        label: "countersign_radius_requests_total", dimensions: [("outcome", $0.rawValue)])
                )
            })
        // The release, as a gauge of 1 labelled with it (the usual
        // build_info idiom): a dashboard sees which instances run which.
        CoreMetrics.Gauge(label: "countersign_build_info", dimensions: [("version", CountersignVersion.current)])
            .record(1)
    }

    static let eventLabels = [
        EventName.login, EventName.transaction, EventName.enrollNewTrustedDevice, Self.otherEventLabel,
    ]
    static let otherEventLabel = "other"

    /// The `event` label of an event name: itself if well known, else `other`.
    static func eventLabel(_ name: String) -> String {
        eventLabels.contains(name) ? name : otherEventLabel
    }

    private static func key(_ outcome: EventStatus, _ method: AuthMethod) -> String {
        outcome.rawValue + "/" + method.rawValue
    }

    /// A factory for `registry` whose names and labels are valid in
    /// Prometheus' exposition format (`hb.requests` → `hb_requests`).
    public static func factory(for registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.nameAndLabelSanitizer = { name, labels in
            (sanitize(name), labels.map { (sanitize($0.0), $0.1) })
        }
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30),
        ]
        return factory
    }

    private static func sanitize(_ name: String) -> String {
        String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") ? $0 : "_" })
    }

    func created(_ event: ApprovalEvent) {
        creations[Self.eventLabel(event.name)]?.increment()
    }

    func decided(_ event: ApprovalEvent) {
        decisions[Self.key(event.storedStatus, event.method)]?.increment()
    }

    static let outboxOutcomes = ["queued", "delivered", "retried", "failed", "cancelled"]

    /// Messages written to the outbox.
    func queued(_ messages: [OutboxMessage]) {
        for message in messages { outbox[message.kind]?["queued"]?.increment() }
    }

    /// This instance's attempts of a kind under way now.
    func outboxInFlight(_ kind: OutboxMessage.Kind, _ count: Int) {
        outboxInFlight[kind]?.record(count)
    }

    /// One attempt's outcome; a delivery also records the time since the
    /// message was queued.
    func outboxAttempted(_ message: OutboxMessage, outcome: OutboxOutcome, now: Date) {
        let label: String
        switch outcome {
        case .delivered:
            label = "delivered"
            outboxLatency[message.kind]?.record(duration: .seconds(max(0, now.timeIntervalSince(message.createdAt))))
        case .retry: label = "retried"
        case .failed: label = "failed"
        case .cancelled: label = "cancelled"
        }
        outbox[message.kind]?[label]?.increment()
    }

    /// A RADIUS request, by how it was answered.
    func radius(_ outcome: RADIUSOutcome) {
        radius[outcome]?.increment()
    }

    /// A read of the directory that was applied in full, at `time`.
    func directoryApplied(at time: Date) { directoryRead.record(time.timeIntervalSince1970) }

    /// A read of the directory that failed, was refused or stopped part way.
    func directoryFailed() { directoryFailures.increment() }

    func withdrew() {
        withdrawals.increment()
    }

    /// From the decision's commit to a held long-poll waking on it.
    func woke(after latency: Duration) {
        wake.record(duration: latency)
    }

    /// A held inbox poll answered because its pending set changed, woken
    /// by the change's notification `latency` ago.
    func inboxWoke(after latency: Duration) {
        inboxWake.record(duration: latency)
    }

    /// The exposition text, with the current number of held long-polls
    /// and what a store reached over the network knows of its database.
    func render(longPollsHeld: Int, store: StoreHealth? = nil) -> String? {
        guard let registry else { return nil }
        held.record(longPollsHeld)
        // An embedded store (SQLite) is there while the process is: it
        // reads as available, with no connections, rather than as a gauge
        // that never moved from 0, which an alert would take for an outage.
        storeMetrics.record(
            store
                ?? StoreHealth(available: true, openConnections: 0, reconnects: 0, failedConnects: 0, queryTimeouts: 0))
        return registry.emitToString()
    }
}

/// The store's health as metrics: a gauge of whether the database can be
/// reached and of the connections open, and counters of what went wrong.
/// The store keeps its own totals; each render adds what they grew by.
private final class StoreMetrics: Sendable {
    private let available = CoreMetrics.Gauge(label: "countersign_store_available")
    private let connections = CoreMetrics.Gauge(label: "countersign_store_connections_open")
    private let reconnects = CoreMetrics.Counter(label: "countersign_store_reconnects_total")
    private let failedConnects = CoreMetrics.Counter(label: "countersign_store_connect_failures_total")
    private let timeouts = CoreMetrics.Counter(label: "countersign_store_query_timeouts_total")
    private let seen = Mutex(
        StoreHealth(
            available: true, openConnections: 0, reconnects: 0, failedConnects: 0, queryTimeouts: 0))

    func record(_ health: StoreHealth) {
        available.record(health.available ? 1 : 0)
        connections.record(health.openConnections)
        let before = seen.withLock { seen in
            defer { seen = health }
            return seen
        }
        reconnects.increment(by: max(0, health.reconnects - before.reconnects))
        failedConnects.increment(by: max(0, health.failedConnects - before.failedConnects))
        timeouts.increment(by: max(0, health.queryTimeouts - before.queryTimeouts))
    }
}
