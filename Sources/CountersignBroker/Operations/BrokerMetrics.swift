import CountersignCore
import Foundation
import Metrics
public import Prometheus

/// What the broker counts, through swift-metrics: whatever backend the
/// process bootstrapped (Prometheus in `device-broker serve`, nothing in
/// tests that do not).
public struct BrokerMetrics: Sendable {
    /// The registry `/metrics` shows; nil serves no metrics.
    public let registry: PrometheusCollectorRegistry?

    public init(registry: PrometheusCollectorRegistry? = nil) {
        self.registry = registry
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
        Counter(label: "countersign_events_created_total", dimensions: [("event", event.name)]).increment()
    }

    func decided(_ event: ApprovalEvent) {
        Counter(
            label: "countersign_events_decided_total",
            dimensions: [("outcome", event.storedStatus.rawValue), ("method", event.method.rawValue)]
        ).increment()
    }

    /// From the decision's commit to a held long-poll waking on it.
    func woke(after latency: Duration) {
        Timer(label: "countersign_decision_to_wake_seconds", preferredDisplayUnit: .seconds).recordNanoseconds(
            latency.components.seconds * 1_000_000_000 + latency.components.attoseconds / 1_000_000_000)
    }

    /// The exposition text, with the current number of held long-polls.
    func render(longPollsHeld: Int) -> String? {
        guard let registry else { return nil }
        Gauge(label: "countersign_long_polls_held").record(longPollsHeld)
        return registry.emitToString()
    }
}
