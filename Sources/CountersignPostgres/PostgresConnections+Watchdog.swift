import CountersignStore
import Logging
import NIOCore
import PostgresNIO
import Synchronization

extension PostgresConnections {
    // MARK: The watchdog

    /// Fails waits past their deadline, closes connections whose operation
    /// overran ``PostgresSettings/queryDeadline`` (the query in flight then
    /// fails), and cancels connections being made for too long. When one
    /// connection overran, the idle ones are closed too: they most likely
    /// lead to the same silent server.
    func inspect(now: ContinuousClock.Instant) {
        let (late, overrun, stalled) = state.withLock {
            state -> ([Waiter], [PostgresConnection], [@Sendable () -> Void]) in
            // A wait ends when it is past its deadline and no connection
            // came back or was made meanwhile: a burst larger than the pool
            // is served in turn, a database that stopped answering is not
            // waited for.
            var late: [Waiter] = []
            let noProgress = now - state.lastProgress > settings.acquireWait
            state.waiters.removeAll { waiter in
                guard waiter.hold != nil, waiter.deadline < now, noProgress || now - waiter.deadline > .seconds(30)
                else { return false }
                late.append(waiter)
                return true
            }
            var overrun: [PostgresConnection] = []
            for (key, lease) in state.leases where !lease.overran {
                guard let hold = lease.hold, let waiting = lease.waiting, now - waiting > hold else { continue }
                state.leases[key]?.overran = true
                state.queryTimeouts += 1
                overrun.append(lease.connection)
            }
            var stalled: [@Sendable () -> Void] = []
            for (id, connecting) in state.connects where connecting.deadline < now {
                stalled.append(connecting.cancel)
                state.connects[id]?.deadline = now + .seconds(3600)
            }
            return (late, overrun, stalled)
        }
        let wait = settings.acquireWait
        for waiter in late {
            waiter.continuation.resume(
                throwing: Unavailable(description: "no PostgreSQL connection came free within \(wait)"))
        }
        for cancel in stalled { cancel() }
        if !overrun.isEmpty {
            logger.error(
                "PostgreSQL did not answer within \(settings.queryDeadline); closing the connection",
                metadata: ["connections": "\(overrun.count)"])
            for connection in overrun { connection.closeNow() }
            retireAll(because: "a query got no answer within \(settings.queryDeadline)")
        }
        refill()
    }
}
