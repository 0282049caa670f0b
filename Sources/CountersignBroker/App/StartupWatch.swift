import Dispatch
import Foundation
import Logging
import Synchronization

/// What a starting broker is waiting for, said every `interval` until it
/// listens: an operator whose broker does not come up reads which step it
/// is on (its database, its keys, the address) instead of silence.
///
/// The timer runs on a dispatch queue of its own, not on the event loops
/// that run the start itself, so it speaks even when the start is stuck.
final class StartupWatch: Sendable {
    private struct State {
        var step: String
        /// Until the broker listens.
        var timer: (any DispatchSourceTimer)?
    }

    private let state: Mutex<State>
    private let started = ContinuousClock.now

    init(logger: Logger, interval: Duration = .seconds(10), first step: String) {
        state = Mutex(
            State(step: step, timer: DispatchSource.makeTimerSource(queue: DispatchQueue(label: "startup-watch"))))
        let every = DispatchTimeInterval.seconds(Int(interval.components.seconds))
        state.withLock { state in
            state.timer?.schedule(deadline: .now() + every, repeating: every, leeway: .seconds(1))
            state.timer?.setEventHandler { [weak self] in
                guard let self, let step = self.state.withLock({ $0.timer == nil ? nil : $0.step }) else { return }
                let elapsed = (ContinuousClock.now - self.started).components.seconds
                logger.warning("still starting after \(elapsed) s: \(step)")
            }
            state.timer?.resume()
        }
    }

    /// The step the start is on now.
    func enter(_ step: String) {
        state.withLock { $0.step = step }
    }

    /// The broker listens: nothing more to say.
    func done() {
        state.withLock { state in
            state.timer?.cancel()
            state.timer = nil
        }
    }

    deinit { done() }
}
