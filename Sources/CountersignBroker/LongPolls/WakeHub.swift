import Foundation
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Wakes long-polls held in this process the moment what they wait for
/// changes. Keys name what is waited on: one event, or one user's inbox.
///
/// A waiter subscribes *before* it reads the store, so a notification that
/// lands between the read and the wait is never lost: the subscription
/// keeps it until the next wait.
///
/// A held long-poll costs one parked continuation and one timer on an event
/// loop, and no task of its own: tens of thousands can be held at once.
///
/// One caller holds a few polls at most (``pollsPerHolder``): a poll that
/// claims its holder's place past that ends the holder's oldest one, which
/// is answered at once. A client whose earlier connection died unnoticed
/// is thus never refused, and a caller that opens hundreds holds no more.
public final class WakeHub: Sendable {
    private struct Waiter {
        var keys: [String]
        /// Who holds the poll, once it claimed its place.
        var holder: String?
        /// Ended by a newer poll of the same holder.
        var replaced = false
        /// Set while the waiter is parked in ``Subscription/wait(timeout:)``.
        var parked: CheckedContinuation<ContinuousClock.Instant?, Never>?
        var timer: Scheduled<Void>?
        /// A notification that came while the waiter was not parked.
        var pending: ContinuousClock.Instant?
        var cancelled = false
    }

    private struct State {
        var nextID = 0
        var byKey: [String: Set<Int>] = [:]
        var waiters: [Int: Waiter] = [:]
        /// Each holder's polls, oldest first.
        var byHolder: [String: [Int]] = [:]
        /// Polls counted among their holders'.
        var held = 0
        /// Held polls a shutdown answered at once.
        var answeredAtShutdown = 0
    }

    /// One waiter woken: its continuation, with what to resume it with.
    private struct Wake {
        let continuation: CheckedContinuation<ContinuousClock.Instant?, Never>
        let timer: Scheduled<Void>?
        let value: ContinuousClock.Instant?

        func resume() {
            timer?.cancel()
            continuation.resume(returning: value)
        }
    }

    private let state = Mutex(State())
    private let timers: any EventLoopGroup
    /// Polls one holder may have held at once.
    public let pollsPerHolder: Int

    /// The polls each caller may hold by default: one, and room for a
    /// second tab, a retry whose earlier connection is not yet known dead,
    /// and a client that polls on two connections.
    public static let defaultPollsPerHolder = 4

    /// Hold timeouts run on the process's shared event loops.
    public init(pollsPerHolder: Int = WakeHub.defaultPollsPerHolder) {
        timers = MultiThreadedEventLoopGroup.singleton
        self.pollsPerHolder = max(1, pollsPerHolder)
    }

    /// Starts listening on `keys`; the subscription ends when released.
    public func subscribe(_ keys: [String]) -> Subscription {
        let id = state.withLock { state in
            state.nextID += 1
            for key in keys { state.byKey[key, default: []].insert(state.nextID) }
            state.waiters[state.nextID] = Waiter(keys: keys)
            return state.nextID
        }
        return Subscription(id: id, hub: self)
    }

    /// Wakes every waiter on `key`.
    public func notify(_ key: String) {
        let now = ContinuousClock.now
        let wakes = state.withLock { state in
            (state.byKey[key] ?? []).compactMap { Self.signal($0, at: now, in: &state) }
        }
        for wake in wakes { wake.resume() }
    }

    /// Wakes every waiter, so each re-reads the store (after notifications
    /// from other instances may have been missed).
    public func notifyAll() {
        let now = ContinuousClock.now
        let wakes = state.withLock { state in
            Array(state.waiters.keys).compactMap { Self.signal($0, at: now, in: &state) }
        }
        for wake in wakes { wake.resume() }
    }

    /// How many subscriptions are open (long-polls and the broker's own waits).
    public var waiting: Int { state.withLock { $0.waiters.count } }

    /// How many long-polls are held: subscriptions that claimed a holder.
    public var held: Int { state.withLock { $0.held } }

    /// How many held polls (of requesters, backends and devices) the
    /// shutdown answered before their hold ended.
    public var answeredAtShutdown: Int { state.withLock { $0.answeredAtShutdown } }

    /// Counts subscription `id` among `holder`'s polls; past
    /// ``pollsPerHolder`` the holder's oldest is replaced: its wait returns
    /// at once, and keeps returning at once.
    fileprivate func claim(_ id: Int, holder: String) {
        let wake: Wake? = state.withLock { state in
            guard state.waiters[id] != nil, state.waiters[id]?.holder == nil else { return nil }
            state.waiters[id]?.holder = holder
            state.byHolder[holder, default: []].append(id)
            state.held += 1
            guard let held = state.byHolder[holder], held.count > pollsPerHolder else { return nil }
            let oldest = held[0]
            state.byHolder[holder]?.removeFirst()
            state.held -= 1
            state.waiters[oldest]?.holder = nil
            state.waiters[oldest]?.replaced = true
            return Self.unpark(oldest, with: nil, in: &state)
        }
        wake?.resume()
    }

    fileprivate func isReplaced(_ id: Int) -> Bool { state.withLock { $0.waiters[id]?.replaced ?? false } }

    /// Wakes a parked waiter, or keeps the notification for its next wait.
    private static func signal(_ id: Int, at now: ContinuousClock.Instant, in state: inout State) -> Wake? {
        if let wake = unpark(id, with: now, in: &state) { return wake }
        state.waiters[id]?.pending = now
        return nil
    }

    /// Takes a parked waiter's continuation (and its timer), to resume with `value`.
    private static func unpark(_ id: Int, with value: ContinuousClock.Instant?, in state: inout State) -> Wake? {
        guard let continuation = state.waiters[id]?.parked else { return nil }
        let timer = state.waiters[id]?.timer
        state.waiters[id]?.parked = nil
        state.waiters[id]?.timer = nil
        return Wake(continuation: continuation, timer: timer, value: value)
    }

    private func park(
        _ id: Int, _ continuation: CheckedContinuation<ContinuousClock.Instant?, Never>, timeout: Duration
    ) {
        let ready: ContinuousClock.Instant?? = state.withLock { state in
            guard var waiter = state.waiters[id] else { return .some(nil) }
            if let pending = waiter.pending {
                waiter.pending = nil
                state.waiters[id] = waiter
                return .some(pending)
            }
            if waiter.cancelled || waiter.replaced { return .some(nil) }
            waiter.parked = continuation
            state.waiters[id] = waiter
            return .none
        }
        if let ready {
            continuation.resume(returning: ready)
            return
        }
        let timer = timers.any().scheduleTask(in: TimeAmount(timeout)) { [self] in
            self.expire(id)
        }
        let fired = state.withLock { state in
            guard state.waiters[id]?.parked != nil else { return true }
            state.waiters[id]?.timer = timer
            return false
        }
        // Woken before the timer was stored: nobody else will cancel it.
        if fired { timer.cancel() }
    }

    /// The hold ran out, or the task was cancelled.
    private func expire(_ id: Int, cancelled: Bool = false) {
        let wake = state.withLock { state in
            if cancelled { state.waiters[id]?.cancelled = true }
            return Self.unpark(id, with: nil, in: &state)
        }
        wake?.resume()
    }

    fileprivate func remove(_ id: Int) {
        state.withLock { state in
            guard let waiter = state.waiters.removeValue(forKey: id) else { return }
            for key in waiter.keys {
                state.byKey[key]?.remove(id)
                if state.byKey[key]?.isEmpty == true { state.byKey[key] = nil }
            }
            if let holder = waiter.holder, var held = state.byHolder[holder] {
                held.removeAll { $0 == id }
                state.byHolder[holder] = held.isEmpty ? nil : held
                state.held -= 1
            }
        }
    }

    /// One waiter's registration. Notifications on its keys are kept from
    /// the moment it subscribes; several waits in turn may use it.
    public final class Subscription: Sendable {
        let id: Int
        let hub: WakeHub

        fileprivate init(id: Int, hub: WakeHub) {
            self.id = id
            self.hub = hub
        }

        deinit { hub.remove(id) }

        /// Counts this poll as one of `holder`'s (a device, an event's
        /// requester), once the caller is known to be it: a newer poll past
        /// the holder's limit replaces the oldest.
        public func claim(holder: String) { hub.claim(id, holder: holder) }

        /// Whether a newer poll of the same holder replaced this one: the
        /// hold should end and answer with what it has.
        public var isReplaced: Bool { hub.isReplaced(id) }

        /// Returns when notified (with when the notification was sent), or
        /// with nil after `timeout` or when the task is cancelled; returns
        /// at once when the broker starts shutting down.
        @discardableResult
        public func wait(timeout: Duration) async -> ContinuousClock.Instant? {
            guard timeout > .zero, !Task.isShuttingDownGracefully else { return nil }
            // The closures capture only `self`: their contexts are async
            // frames the parked task keeps.
            return await withGracefulShutdownHandler {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        self.hub.park(self.id, continuation, timeout: timeout)
                    }
                } onCancel: {
                    self.hub.expire(self.id, cancelled: true)
                }
            } onGracefulShutdown: {
                self.hub.shutDown(id: self.id)
            }
        }
    }

    /// Wakes one waiter, as the broker starts shutting down.
    private func shutDown(id: Int) {
        let now = ContinuousClock.now
        let wake = state.withLock { state in
            if state.waiters[id]?.holder != nil { state.answeredAtShutdown += 1 }
            return Self.signal(id, at: now, in: &state)
        }
        wake?.resume()
    }
}
