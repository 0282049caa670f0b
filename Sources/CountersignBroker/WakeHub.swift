import Foundation
import ServiceLifecycle
import Synchronization

/// Wakes long-polls held in this process the moment what they wait for
/// changes. Keys name what is waited on: one event, or one user's inbox.
///
/// A waiter subscribes *before* it re-reads the store, so a notification
/// that lands between the read and the wait is never lost: the stream
/// buffers it.
public final class WakeHub: Sendable {
    private struct State {
        var nextID = 0
        var waiters: [String: [Int: AsyncStream<ContinuousClock.Instant>.Continuation]] = [:]
        var count = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Starts listening on `keys`; the subscription ends when released.
    public func subscribe(_ keys: [String]) -> Subscription {
        let (stream, continuation) = AsyncStream<ContinuousClock.Instant>.makeStream(
            bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            state.nextID += 1
            for key in keys { state.waiters[key, default: [:]][state.nextID] = continuation }
            state.count += 1
            return state.nextID
        }
        return Subscription(id: id, keys: keys, stream: stream, continuation: continuation, hub: self)
    }

    /// Wakes every waiter on `key`.
    public func notify(_ key: String) {
        let continuations = state.withLock { $0.waiters[key].map { Array($0.values) } ?? [] }
        let now = ContinuousClock.now
        for continuation in continuations { continuation.yield(now) }
    }

    /// Wakes every waiter, so each re-reads the store (after notifications
    /// from other instances may have been missed).
    public func notifyAll() {
        let continuations = state.withLock { $0.waiters.values.flatMap(\.values) }
        let now = ContinuousClock.now
        for continuation in continuations { continuation.yield(now) }
    }

    /// How many subscriptions are open (long-polls held).
    public var waiting: Int { state.withLock { $0.count } }

    fileprivate func remove(_ id: Int, keys: [String]) {
        state.withLock { state in
            for key in keys {
                state.waiters[key]?[id] = nil
                if state.waiters[key]?.isEmpty == true { state.waiters[key] = nil }
            }
            state.count -= 1
        }
    }

    /// One waiter's registration.
    public final class Subscription: Sendable {
        let id: Int
        let keys: [String]
        let stream: AsyncStream<ContinuousClock.Instant>
        let continuation: AsyncStream<ContinuousClock.Instant>.Continuation
        let hub: WakeHub

        fileprivate init(
            id: Int, keys: [String], stream: AsyncStream<ContinuousClock.Instant>,
            continuation: AsyncStream<ContinuousClock.Instant>.Continuation,
            hub: WakeHub
        ) {
            self.id = id
            self.keys = keys
            self.stream = stream
            self.continuation = continuation
            self.hub = hub
        }

        deinit { hub.remove(id, keys: keys) }

        /// Returns when notified (with when the notification was sent),
        /// after `timeout`, or when the broker starts shutting down,
        /// whichever comes first.
        @discardableResult
        public func wait(timeout: Duration) async -> ContinuousClock.Instant? {
            guard timeout > .zero, !Task.isShuttingDownGracefully else { return nil }
            return await withGracefulShutdownHandler {
                await withTaskGroup(of: ContinuousClock.Instant?.self) { group in
                    group.addTask { [stream] in
                        for await sent in stream { return sent }
                        return nil
                    }
                    group.addTask {
                        try? await Task.sleep(for: timeout)
                        return nil
                    }
                    let first = await group.next() ?? nil
                    group.cancelAll()
                    return first
                }
            } onGracefulShutdown: { [continuation] in
                continuation.yield(ContinuousClock.now)
            }
        }
    }
}
