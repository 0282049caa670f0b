public import CountersignCore
public import Foundation

/// What recording an attempt's outcome writes to an outbox message, the
/// same in every store.
public struct OutboxChange: Sendable, Equatable {
    public var state: OutboxMessage.State
    /// The next attempt, for a retry.
    public var nextAttemptAt: Date?
    /// The reason kept for an operator, at most ``maxErrorLength`` bytes.
    public var error: String?
    public var finishedAt: Date?
    /// The kinds whose payload this change wipes: those that carry a
    /// secret (``OutboxMessage/Kind/payloadIsSecret``), once the message is
    /// finished. The store's one statement applies it to the row's kind.
    public var wipingKinds: [String] {
        state == .queued ? [] : OutboxMessage.Kind.allCases.filter(\.payloadIsSecret).map(\.rawValue)
    }

    /// The longest reason kept; a receiver's answer can be long.
    public static let maxErrorLength = 500

    public init(_ outcome: OutboxOutcome, now: Date) {
        switch outcome {
        case .delivered:
            self.init(state: .delivered, finishedAt: now)
        case .retry(let at, let reason):
            self.init(state: .queued, nextAttemptAt: at, error: reason)
        case .failed(let reason):
            self.init(state: .failed, error: reason, finishedAt: now)
        case .cancelled(let reason):
            self.init(state: .cancelled, error: reason, finishedAt: now)
        }
    }

    private init(state: OutboxMessage.State, nextAttemptAt: Date? = nil, error: String? = nil, finishedAt: Date? = nil)
    {
        self.state = state
        self.nextAttemptAt = nextAttemptAt
        self.error = error.map { String(decoding: $0.utf8.prefix(Self.maxErrorLength), as: UTF8.self) }
        self.finishedAt = finishedAt
    }
}
