/// How many events of one kind were made since a time, as a store counts
/// them: by app, channel, state at the time of reading, why it ended and
/// how it was approved.
public struct EventTally: Sendable, Equatable {
    public let issuer: String
    public let channel: EventChannel
    /// As it stands at the time of reading: a pending event whose window
    /// closed is `expired`.
    public let status: EventStatus
    public let reason: StatusReason?
    public let method: AuthMethod
    public let count: Int

    public init(
        issuer: String, channel: EventChannel, status: EventStatus, reason: StatusReason?, method: AuthMethod,
        count: Int
    ) {
        self.issuer = issuer
        self.channel = channel
        self.status = status
        self.reason = reason
        self.method = method
        self.count = count
    }
}

/// What the dashboard says of a stretch of time: how the events made in
/// it ended, in the words an operator watches for.
public struct EventTotals: Sendable, Equatable {
    public var total = 0
    public var pending = 0
    public var approved = 0
    /// Rejected for any reason, reported fraud included.
    public var rejected = 0
    /// Nobody answered in the window, or the requester gave up.
    public var expired = 0
    /// "This wasn't me".
    public var fraudReported = 0
    /// Approved with a TOTP code, the offline fallback.
    public var totpFallbacks = 0

    public init() {}

    /// Adds one tally.
    public mutating func add(_ tally: EventTally) {
        total += tally.count
        switch tally.status {
        case .pending: pending += tally.count
        case .approved: approved += tally.count
        case .rejected: rejected += tally.count
        case .expired: expired += tally.count
        }
        if tally.reason == .fraudReported { fraudReported += tally.count }
        if tally.status == .approved, tally.method == .totp { totpFallbacks += tally.count }
    }

    /// The totals of `tallies`, all of them and grouped by `key` (the
    /// groups sorted by their total, the most first, then by key).
    public static func of(_ tallies: [EventTally], by key: (EventTally) -> String) -> (
        all: EventTotals, groups: [(key: String, totals: EventTotals)]
    ) {
        var all = EventTotals()
        var groups: [String: EventTotals] = [:]
        for tally in tallies {
            all.add(tally)
            groups[key(tally), default: EventTotals()].add(tally)
        }
        let sorted = groups.map { (key: $0.key, totals: $0.value) }.sorted {
            $0.totals.total != $1.totals.total ? $0.totals.total > $1.totals.total : $0.key < $1.key
        }
        return (all, sorted)
    }
}

/// A figure of the broker's health against the thresholds that make it
/// worth an operator's look (`warning`) or action (`critical`).
public struct HealthCheck: Sendable, Equatable {
    public enum State: String, Sendable, Comparable {
        case ok, warning, critical

        private static func rank(_ state: State) -> Int {
            switch state {
            case .ok: 0
            case .warning: 1
            case .critical: 2
            }
        }

        public static func < (lhs: State, rhs: State) -> Bool {
            rank(lhs) < rank(rhs)
        }
    }

    public let name: String
    public let value: Int
    /// At or above: warning.
    public let warning: Int
    /// At or above: critical.
    public let critical: Int

    public init(name: String, value: Int, warning: Int, critical: Int) {
        self.name = name
        self.value = value
        self.warning = warning
        self.critical = critical
    }

    public var state: State { value >= critical ? .critical : value >= warning ? .warning : .ok }

    /// The checks of one reading. The store: down is critical. Messages
    /// waiting to be sent: a backlog of 100 is a slow receiver, 1,000 one
    /// that is away. Messages given up on: any is worth a look (each is a
    /// notice an app never got), 100 a receiver gone for good. Fraud
    /// protections running: any says someone reported a request that was
    /// not theirs; 10 at once, a campaign.
    public static func reading(storeAvailable: Bool, outboxQueued: Int, outboxFailed: Int, protections: Int)
        -> [HealthCheck]
    {
        [
            HealthCheck(name: "store_unavailable", value: storeAvailable ? 0 : 1, warning: 1, critical: 1),
            HealthCheck(name: "outbox_queued", value: outboxQueued, warning: 100, critical: 1000),
            HealthCheck(name: "outbox_failed", value: outboxFailed, warning: 1, critical: 100),
            HealthCheck(name: "fraud_protections", value: protections, warning: 1, critical: 10),
        ]
    }
}
