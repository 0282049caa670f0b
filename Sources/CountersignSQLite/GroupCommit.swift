import CountersignStore
import Foundation
import GRDB
import Synchronization

/// Group commit: writes submitted while the writer is busy run together in
/// the next transaction, each inside its own savepoint, and share one
/// commit (one fsync with `synchronous=FULL`). Every caller is answered
/// only after the commit that holds its write has returned, so nothing is
/// acknowledged before it is on disk; a write that fails rolls back its
/// savepoint alone, and a commit that fails fails every write in it.
final class GroupCommitter: Sendable {
    private struct Job: Sendable {
        /// Runs the write (in its own savepoint when it shares the
        /// transaction), keeps its outcome, and says whether it succeeded.
        let run: @Sendable (Database, _ alone: Bool) -> Bool
        /// Answers the caller once the batch's commit is known.
        let finish: @Sendable ((any Error)?) -> Void
    }

    private struct State {
        var queue: [Job] = []
        var draining = false
        var commits = 0
    }

    private let pool: DatabasePool
    private let state = Mutex(State())
    /// The most writes one transaction takes.
    private let maximumBatch: Int

    init(pool: DatabasePool, maximumBatch: Int = 256) {
        self.pool = pool
        self.maximumBatch = maximumBatch
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let outcome = Mutex<Result<T, any Error>?>(nil)
            let job = Job(
                run: { db, alone in
                    let result: Result<T, any Error>
                    do {
                        if alone {
                            result = .success(try body(db))
                        } else {
                            var value: T?
                            try db.inSavepoint {
                                value = try body(db)
                                return .commit
                            }
                            result = .success(value!)
                        }
                    } catch {
                        result = .failure(error)
                    }
                    outcome.withLock { $0 = result }
                    if case .success = result { return true }
                    return false
                },
                finish: { commitError in
                    if let commitError {
                        continuation.resume(throwing: commitError)
                    } else {
                        continuation.resume(with: outcome.withLock { $0 }!)
                    }
                })
            let startDrain = state.withLock { state in
                state.queue.append(job)
                guard !state.draining else { return false }
                state.draining = true
                return true
            }
            if startDrain { Task { await self.drain() } }
        }
    }

    /// Transactions committed so far.
    var commits: Int { state.withLock { $0.commits } }

    /// Commits batches until no write is waiting.
    private func drain() async {
        while true {
            let batch: [Job] = state.withLock { state in
                let taken = Array(state.queue.prefix(maximumBatch))
                state.queue.removeFirst(taken.count)
                if taken.isEmpty { state.draining = false }
                return taken
            }
            guard !batch.isEmpty else { return }
            do {
                try await pool.writeWithoutTransaction { db in
                    try db.inTransaction(.immediate) {
                        guard batch.count > 1 else {
                            // Alone, the write needs no savepoint: if it fails, the transaction is rolled back.
                            return batch[0].run(db, true) ? .commit : .rollback
                        }
                        for job in batch { _ = job.run(db, false) }
                        return .commit
                    }
                }
                state.withLock { $0.commits += 1 }
                for job in batch { job.finish(nil) }
            } catch {
                for job in batch { job.finish(error) }
            }
        }
    }
}
