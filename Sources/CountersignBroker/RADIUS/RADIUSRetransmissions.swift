import CountersignCore
import Synchronization

/// The answers of the last 30 s by client address, port, Identifier and
/// Request Authenticator (RFC 5080 §2.2.2): a NAS that retransmits a
/// request gets the same answer again, and one still being answered (held
/// for a decision) opens nothing new.
final class RADIUSRetransmissions: Sendable {
    struct Key: Hashable, Sendable {
        let source: String
        let port: Int
        let code: UInt8
        let identifier: UInt8
        let authenticator: [UInt8]
    }

    enum Entry: Sendable {
        case inProgress
        case answered([UInt8], at: ContinuousClock.Instant)
    }

    enum Begun: Sendable, Equatable {
        case new, inProgress
        case answered([UInt8])
    }

    static let kept: Duration = .seconds(30)
    /// Requests remembered at most; beyond, the oldest answers go first.
    static let capacity = 65536

    private let entries = Mutex<(entries: [Key: Entry], pruned: ContinuousClock.Instant?)>(([:], nil))

    func begin(_ key: Key, now: ContinuousClock.Instant = .now) -> Begun {
        entries.withLock { state in
            switch state.entries[key] {
            case .inProgress: return .inProgress
            case .answered(let answer, let at) where now - at < Self.kept: return .answered(answer)
            default:
                // Stale answers go every few seconds, and at once when full,
                // so that memory follows the last 30 s of requests.
                let full = state.entries.count >= Self.capacity
                if full || state.pruned.map({ now - $0 >= .seconds(5) }) ?? true {
                    Self.prune(&state.entries, now: now, full: full)
                    state.pruned = now
                }
                state.entries[key] = .inProgress
                return .new
            }
        }
    }

    func finish(_ key: Key, answer: [UInt8], now: ContinuousClock.Instant = .now) {
        entries.withLock { $0.entries[key] = .answered(answer, at: now) }
    }

    /// Forgets a request that got no answer: its retransmission is tried afresh.
    func forget(_ key: Key) {
        _ = entries.withLock { $0.entries.removeValue(forKey: key) }
    }

    /// How many requests it remembers.
    var count: Int { entries.withLock { $0.entries.count } }

    /// Drops the answers older than ``kept``; when `full` and none were,
    /// the oldest half.
    private static func prune(_ entries: inout [Key: Entry], now: ContinuousClock.Instant, full: Bool) {
        let answered = entries.compactMap { key, entry -> (Key, ContinuousClock.Instant)? in
            if case .answered(_, let at) = entry { return (key, at) }
            return nil
        }
        let stale = answered.filter { now - $0.1 >= kept }
        let dropped =
            stale.isEmpty && full ? Array(answered.sorted { $0.1 < $1.1 }.prefix(answered.count / 2 + 1)) : stale
        for (key, _) in dropped { entries.removeValue(forKey: key) }
    }
}
