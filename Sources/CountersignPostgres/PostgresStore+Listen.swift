import CountersignCore
import CountersignStore
import Logging
import PostgresNIO
import Synchronization

extension PostgresStore {
    // MARK: Wake-ups across instances

    /// Listens on a connection of its own, made again whenever it is lost
    /// (after a pause growing to a second). `resync` runs each time
    /// listening starts: waiters then re-check the store for what they
    /// missed meanwhile. The connection is probed every few seconds, so a
    /// database gone silent (a cut network) is noticed as a closed one is.
    public func followChanges(
        wake: @escaping @Sendable (String) -> Void, resync: @escaping @Sendable () -> Void
    ) async throws {
        var failures = 0
        var announced = false
        while !Task.isCancelled {
            do {
                let connection = try await connections.openDedicated()
                failures = 0
                let announce = !announced
                announced = true
                let outcome = await Result {
                    try await listen(on: connection, announce: announce, wake: wake, resync: resync)
                }
                try? await connection.close()
                try outcome.get()
            } catch {
                // Stopping ends the listen as it ends anything else: no
                // failure of the broker's.
                guard !Task.isCancelled else { return }
                failures += 1
                // Once per outage, not once per attempt.
                if failures == 1 {
                    logger.warning(
                        "lost the LISTEN connection; waiters re-check the store once it is back",
                        metadata: ["error": "\(mapped(error))"])
                }
            }
            // Also after a listen that ended without an error: again at once could spin.
            try? await Task.sleep(for: PostgresConnections.pause(afterFailures: failures + 1))
        }
    }

    /// Listens on `connection` until it fails; with `announce`, first
    /// tells every instance to re-read (``WakeKey/resync``): wakes that
    /// this process committed changes for but did not send before it last
    /// stopped (``wake(_:on:)``) are made good.
    func listen(
        on connection: PostgresConnection, announce: Bool, wake: @escaping @Sendable (String) -> Void,
        resync: @escaping @Sendable () -> Void
    ) async throws {
        let logger = logger
        let deadline = connections.settings.queryDeadline
        let writable = connections.settings.requireWritable
        let connections = connections
        let session = PostgresSession(connection: connection, pool: connections)
        try await connection.listen(on: Self.channel) { notifications in
            // Listening now: anything committed before may have been missed.
            resync()
            if announce {
                try await session.run("SELECT pg_notify(\(Self.channel), \(WakeKey.resync))", logger: logger)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await notification in notifications {
                        if notification.payload == WakeKey.resync { resync() } else { wake(notification.payload) }
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try await Task.sleep(for: .seconds(2))
                        // Also a server turned read-only: NOTIFY is sent where
                        // writes go, and a listener on the old primary hears nothing.
                        let ok = await Answer.within(deadline) {
                            let row = try? await session.row("SHOW transaction_read_only", logger: logger)
                            let readOnly = try? row?.value("transaction_read_only", as: String.self)
                            return readOnly == "off" || (readOnly != nil && !writable)
                        }
                        guard ok else {
                            // Ends the notifications too; the pool's
                            // connections lead to the same server.
                            connection.closeNow()
                            connections.retireAll(because: "the LISTEN connection's server is silent or read-only")
                            throw PostgresConnections.Unavailable(
                                description: "the LISTEN connection's server did not answer within \(deadline), "
                                    + "or refuses writes")
                        }
                    }
                }
                // Either ends the other: closing the connection ends the
                // notifications, which do not end on cancellation alone.
                defer {
                    group.cancelAll()
                    connection.closeNow()
                }
                try await group.next()
            }
        }
    }
}
