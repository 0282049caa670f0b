public import CountersignCore
public import Foundation

/// The pending events of a device's inbox, and the state that names the
/// set for the next held poll.
public struct InboxSnapshot: Decodable, Sendable {
    public let events: [InboxItem]
    /// Absent from a broker older than states: the poll is then held only
    /// while nothing is pending.
    public let state: String?
    /// The longest the broker holds a poll, in seconds (its `--max-wait`);
    /// absent from a broker older than it.
    public let hold: Int?
}

/// Follows a device's inbox over held polls: the pending requests each
/// time they change (one added, one ended for whatever reason), riding out
/// a broker restart or a dropped connection with one back-off.
public struct InboxWatcher: Sendable {
    public enum Change: Sendable {
        /// The requests waiting now, all of them.
        case pending([InboxItem])
        /// The broker could not be reached; polling goes on.
        case lost(CountersignError)
        /// The broker answers again after `lost`.
        case reconnected
    }

    let client: CountersignClient
    let credential: DeviceCredential
    /// The longest one poll is asked to be held: nil for as long as the
    /// broker holds one (its answers' `hold`, less a margin), or a bound of
    /// the caller's, for a network that cuts idle requests off sooner.
    let longestHold: Int?

    public init(client: CountersignClient, credential: DeviceCredential, longestHold: Int? = nil) {
        self.client = client
        self.credential = credential
        self.longestHold = longestHold
    }

    /// A fixed hold, as the watcher asked of brokers whose longest was 30 s:
    /// now a bound on what a broker that holds longer is asked.
    @available(*, deprecated, renamed: "init(client:credential:longestHold:)")
    public init(client: CountersignClient, credential: DeviceCredential, hold: Int) {
        self.init(client: client, credential: credential, longestHold: hold)
    }

    /// The hold to ask of a broker whose answers say it holds a poll
    /// `brokerHold` seconds: 5 s short of it, so that the broker answers
    /// (with the set as it is) before anything in between gives up at its
    /// own round number; 25 s of a broker that does not say.
    public static func hold(askingOf brokerHold: Int?) -> Int {
        brokerHold.map { $0 > 10 ? $0 - 5 : max(1, $0) } ?? 25
    }

    /// The hold to ask for next, within the caller's bound.
    func hold(brokerHold: Int?) -> Int {
        max(1, min(Self.hold(askingOf: brokerHold), longestHold ?? .max))
    }

    /// The changes until `deadline` (the stream then ends) or until the
    /// consumer stops. The first value is the inbox as it is. Only the
    /// newest set is kept while the consumer is busy. A lasting error
    /// (a removed device) ends the stream with it; a transient one too,
    /// unless `ridingOutOutages`.
    public func changes(until deadline: Date? = nil, ridingOutOutages: Bool = true) -> AsyncThrowingStream<
        Change, any Error
    > {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: Change.self, throwing: (any Error).self, bufferingPolicy: .bufferingNewest(1))
        let task = Task {
            do {
                try await follow(until: deadline, ridingOutOutages: ridingOutOutages) { continuation.yield($0) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    private func follow(until deadline: Date?, ridingOutOutages: Bool, _ emit: (Change) -> Void) async throws {
        var state: String?
        var brokerHold: Int?
        var shown = false
        var lost = 0
        while !Task.isCancelled {
            let left = deadline?.timeIntervalSinceNow ?? .infinity
            // One look whatever the deadline; none after it.
            if shown || lost > 0, left <= 0 { return }
            let wait = shown ? Int(min(Double(hold(brokerHold: brokerHold)), left.rounded(.up))) : 0
            let asked = ContinuousClock.now
            do {
                let snapshot = try await client.inbox(credential, wait: wait, unchangedFrom: state)
                let back = lost > 0
                if back { emit(.reconnected) }
                lost = 0
                // After an outage the set is given again, changed or not:
                // a busy consumer may have missed the last one.
                if !shown || back || snapshot.state == nil || snapshot.state != state {
                    emit(.pending(snapshot.events))
                } else if wait > 0, ContinuousClock.now - asked < .seconds(1) {
                    // Answered at once, unchanged: a newer poll of this
                    // device took this one's place. A pause, so that several
                    // watchers of one device do not take turns as fast as the
                    // broker answers.
                    try await Task.sleep(for: .seconds(1))
                }
                shown = true
                if snapshot.state == nil, !snapshot.events.isEmpty {
                    // A broker without states answers at once while
                    // something waits: ask again a little later.
                    try await Task.sleep(for: .seconds(2))
                }
                state = snapshot.state
                brokerHold = snapshot.hold
            } catch let error as CountersignError where ridingOutOutages && error.isTransient {
                if lost == 0 { emit(.lost(error)) }
                lost += 1
                var pause = Self.backoff(after: lost)
                if let deadline {
                    pause = min(pause, .milliseconds(Int64(max(0, deadline.timeIntervalSinceNow) * 1000)))
                }
                try await Task.sleep(for: pause)
            }
        }
    }

    /// 1, 2, 4, 8, 16, then every 30 s, each up to a quarter shorter so
    /// that approvers cut off together do not come back together.
    public static func backoff(after failures: Int) -> Duration {
        let seconds = min(30.0, pow(2.0, Double(min(failures, 6) - 1)))
        return .milliseconds(Int64(seconds * 1000 * Double.random(in: 0.75...1)))
    }
}
