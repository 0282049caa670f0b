import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// The first of several answers to one question (a query or its timer).
final class Answer: Sendable {
    /// What `question` answers within `timeout`, else false. A question
    /// still waiting then is left to end by itself (a query, at the pool's
    /// query deadline): no caller waits for it.
    static func within(_ timeout: Duration, _ question: @escaping @Sendable () async -> Bool) async -> Bool {
        let answer = Answer()
        Task { answer.settle(await question()) }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            answer.settle(false)
        }
        defer { timer.cancel() }
        return await answer.value
    }

    private let state = Mutex<(value: Bool?, waiter: CheckedContinuation<Bool, Never>?)>((nil, nil))

    func settle(_ value: Bool) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    var value: Bool {
        get async {
            await withCheckedContinuation { continuation in
                let value = state.withLock { state -> Bool? in
                    if state.value == nil { state.waiter = continuation }
                    return state.value
                }
                if let value { continuation.resume(returning: value) }
            }
        }
    }
}

/// A leased connection, as the store's operations use it: each query's
/// wait for its answer is timed (by the event loop that receives it), so
/// that the pool's watchdog can tell a database that does not answer from a
/// broker too busy to read the answer.
struct PostgresSession: Sendable {
    let connection: PostgresConnection
    let pool: PostgresConnections

    /// The rows of a query, read into memory.
    ///
    /// Sent from the connection's event loop, where it closes, after a
    /// look at whether it is open: postgres-nio (1.33) writes a query to a
    /// closed connection without a promise for the write, and the query is
    /// never answered, not even on cancellation; on an open one it is
    /// answered, or failed when the connection closes.
    func rows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRandomAccessRow] {
        let key = ObjectIdentifier(connection)
        let pool = pool
        pool.sending(key)
        let result = try await connection.eventLoop.flatSubmit {
            [connection] () -> EventLoopFuture<PostgresQueryResult> in
            guard !connection.isClosed else {
                return connection.eventLoop.makeFailedFuture(PostgresConnections.Closed())
            }
            let answer: EventLoopFuture<PostgresQueryResult> = connection.query(query, logger: logger)
            return answer
        }.always { _ in pool.answered(key) }.get()
        return result.rows.map { $0.makeRandomAccess() }
    }

    /// The first row of a query, if any.
    func row(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRandomAccessRow? {
        try await rows(query, logger: logger).first
    }

    /// Runs a statement; with `RETURNING`, how many rows it touched.
    @discardableResult
    func run(_ query: PostgresQuery, logger: Logger) async throws -> Int {
        try await rows(query, logger: logger).count
    }

    /// Wakes long-polls on every instance once the transaction commits.
    func notify(_ key: String, logger: Logger) async throws {
        try await run("SELECT pg_notify(\(PostgresStore.channel), \(key))", logger: logger)
    }
}
