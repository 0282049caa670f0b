import Synchronization

/// Values worked out once per process, for keys whose value never changes
/// (a stored device key, the verifier made from it). Bounded: when full it
/// starts again empty, which costs only the work it saved.
final class ProcessCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let entries = Mutex<[Key: Value]>([:])
    private let capacity: Int

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    subscript(key: Key) -> Value? {
        entries.withLock { $0[key] }
    }

    func insert(_ value: Value, for key: Key) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = value
        }
    }
}
