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
///
/// Inside a transaction, statements whose answers nothing reads (`BEGIN`,
/// inserts, `COMMIT`) are sent without waiting for them (``send(_:logger:)``):
/// the connection sends each as soon as PostgreSQL has answered the one
/// before, without the operation's task being scheduled in between. On a
/// busy broker each such wait was a turn in an event loop's queue while the
/// transaction, and its locks, stayed open (docs/benchmarks.md). Their
/// answers are checked, in order, by the next statement that is awaited.
struct PostgresSession: Sendable {
    let connection: PostgresConnection
    let pool: PostgresConnections
    /// Answers of statements sent and not yet checked, and the keys to
    /// wake after commit.
    private let unchecked = Unchecked()

    init(connection: PostgresConnection, pool: PostgresConnections) {
        self.connection = connection
        self.pool = pool
    }

    private final class Unchecked: Sendable {
        let answers = Mutex<[EventLoopFuture<[PostgresRow]>]>([])
        let wakes = Mutex<[String]>([])
    }

    /// The rows of a query, read into memory; a failure of a statement
    /// sent before it is thrown first.
    ///
    /// Sent from the connection's event loop, where it closes, after a
    /// look at whether it is open: postgres-nio (1.33) writes a query to a
    /// closed connection without a promise for the write, and the query is
    /// never answered, not even on cancellation; on an open one it is
    /// answered, or failed when the connection closes.
    func rows(_ statement: PostgresStatement, logger: Logger) async throws -> [PostgresRandomAccessRow] {
        let answer = submit(statement, logger: logger)
        try await checkSent()
        return try await answer.get().map { $0.makeRandomAccess() }
    }

    /// Sends a statement whose answer nothing reads, without waiting for
    /// it; its failure is thrown by the next statement awaited, or by
    /// ``checkSent()``.
    func send(_ statement: PostgresStatement, logger: Logger) {
        let answer = submit(statement, logger: logger)
        unchecked.answers.withLock { $0.append(answer) }
    }

    /// Waits for the answers of the statements sent, and throws the
    /// first failure among them.
    func checkSent() async throws {
        let answers = unchecked.answers.withLock { answers in
            defer { answers.removeAll() }
            return answers
        }
        var failure: (any Error)?
        for answer in answers {
            do { _ = try await answer.get() } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    /// Sends `statement`, prepared once it is (``PreparedStatements``).
    private func submit(_ statement: PostgresStatement, logger: Logger) -> EventLoopFuture<[PostgresRow]> {
        let key = ObjectIdentifier(connection)
        let pool = pool
        pool.sending(key)
        return connection.eventLoop.flatSubmit { [connection] () -> EventLoopFuture<[PostgresRow]> in
            guard !connection.isClosed else {
                return connection.eventLoop.makeFailedFuture(PostgresConnections.Closed())
            }
            return pool.statements.run(statement, on: connection, logger: logger)
        }.always { _ in pool.answered(key) }
    }

    /// The first row of a query, if any.
    func row(_ statement: PostgresStatement, logger: Logger) async throws -> PostgresRandomAccessRow? {
        try await rows(statement, logger: logger).first
    }

    /// Runs a statement; with `RETURNING`, how many rows it touched.
    @discardableResult
    func run(_ statement: PostgresStatement, logger: Logger) async throws -> Int {
        try await rows(statement, logger: logger).count
    }

    /// Wakes the long-polls waiting on `keys`, on every instance, once the
    /// transaction commits (``PostgresStore/transaction(isolation:hold:_:)``
    /// sends the notifications after its commit).
    func notify(_ keys: [String]) {
        unchecked.wakes.withLock { $0.append(contentsOf: keys) }
    }

    func notify(_ key: String) { notify([key]) }

    /// The keys ``notify(_:)`` collected, once.
    func takeWakes() -> [String] {
        unchecked.wakes.withLock { wakes in
            defer { wakes.removeAll() }
            return wakes
        }
    }
}
