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
        var waiters: [String: [Int: AsyncStream<Void>.Continuation]] = [:]
        var count = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Starts listening on `keys`; the subscription ends when released.
    public func subscribe(_ keys: [String]) -> Subscription {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
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
        for continuation in continuations { continuation.yield() }
    }

    /// Wakes every waiter, so each re-reads the store (after notifications
    /// from other instances may have been missed).
    public func notifyAll() {
        let continuations = state.withLock { $0.waiters.values.flatMap(\.values) }
        for continuation in continuations { continuation.yield() }
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
        let stream: AsyncStream<Void>
        let continuation: AsyncStream<Void>.Continuation
        let hub: WakeHub

        fileprivate init(
            id: Int, keys: [String], stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation,
            hub: WakeHub
        ) {
            self.id = id
            self.keys = keys
            self.stream = stream
            self.continuation = continuation
            self.hub = hub
        }

        deinit { hub.remove(id, keys: keys) }

        /// Returns when notified, after `timeout`, or when the broker starts
        /// shutting down, whichever comes first.
        public func wait(timeout: Duration) async {
            guard timeout > .zero, !Task.isShuttingDownGracefully else { return }
            await withGracefulShutdownHandler {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { [stream] in
                        for await _ in stream { return }
                    }
                    group.addTask { try? await Task.sleep(for: timeout) }
                    await group.next()
                    group.cancelAll()
                }
            } onGracefulShutdown: { [continuation] in
                continuation.yield()
            }
        }
    }
}
