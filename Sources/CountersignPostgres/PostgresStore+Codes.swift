public import CountersignCore
import CountersignStore
public import Foundation
import PostgresNIO

extension PostgresStore {
    public func setTOTPSecret(_ sealed: Data, deviceID: String) async throws {
        let logger = logger
        try await write { db in
            let set = try await db.run(
                """
                UPDATE devices SET totp_secret = \(sealed)
                WHERE id = \(deviceID) AND revoked_at IS NULL AND totp_secret IS NULL
                RETURNING 1
                """, logger: logger)
            guard set == 1 else {
                guard try await db.run("SELECT 1 FROM devices WHERE id = \(deviceID)", logger: logger) == 1 else {
                    throw StoreError(.notFound, "no device \(deviceID)")
                }
                throw StoreError(.conflict, "the device has a TOTP secret already or is revoked")
            }
        }
    }

    public func updateCodes<Outcome: Sendable>(
        issuer: String, clientUserID: String, eventID: String?, deviceID: String?, now: Date,
        _ change: @escaping @Sendable (CodeState) throws -> (CodeChange, Outcome)
    ) async throws -> Outcome {
        let logger = logger
        // READ COMMITTED: the lock on the user orders the changes of their
        // codes (a first failure has no row to lock); the device's and the
        // event's row locks order them with the device's and event's other
        // changes, taken in the order a revocation takes them.
        return try await update(locking: "codes:\(issuer)/\(clientUserID)") { db in
            let failures = try await db.row(
                """
                SELECT consecutive, locked_until, last_attempt_at FROM code_failures
                WHERE issuer = \(issuer) AND client_user_id = \(clientUserID)
                """, logger: logger
            ).map {
                CodeFailures(
                    consecutive: try $0.value("consecutive"), lockedUntil: try $0.optionalDate("locked_until"),
                    lastAttemptAt: try $0.optionalDate("last_attempt_at"))
            }
            var device: TrustedDevice?
            if let deviceID {
                device = try await db.row("SELECT * FROM devices WHERE id = \(deviceID) FOR UPDATE", logger: logger)
                    .map(Self.device(row:))
            }
            var event: ApprovalEvent?
            if let eventID {
                event = try await db.row("SELECT * FROM events WHERE id = \(eventID) FOR UPDATE", logger: logger)
                    .map(Self.event(row:))
            }
            let (after, outcome) = try Self.applying {
                try change(CodeState(failures: failures ?? .none, event: event, device: device))
            }
            if after.failures == .none {
                try await db.run(
                    "DELETE FROM code_failures WHERE issuer = \(issuer) AND client_user_id = \(clientUserID)",
                    logger: logger)
            } else {
                try await db.run(
                    """
                    INSERT INTO code_failures (issuer, client_user_id, consecutive, locked_until, last_attempt_at)
                    VALUES (\(issuer), \(clientUserID), \(after.failures.consecutive),
                        \(after.failures.lockedUntil?.seconds), \(after.failures.lastAttemptAt?.seconds))
                    ON CONFLICT (issuer, client_user_id)
                    DO UPDATE SET consecutive = excluded.consecutive, locked_until = excluded.locked_until,
                        last_attempt_at = excluded.last_attempt_at
                    """, logger: logger)
            }
            if let step = after.acceptedStep, let deviceID {
                try await db.run(
                    "UPDATE devices SET totp_last_step = \(step) WHERE id = \(deviceID)", logger: logger)
            }
            if let changed = after.event {
                try await Self.update(changed, in: db, logger: logger)
                if changed.storedStatus != event?.storedStatus {
                    try await Self.changed(changed, now: now, in: db, logger: logger)
                }
            }
            try await Self.announce(after.notices, into: db, logger: logger)
            return outcome
        }
    }

    public func replaceRecoveryCodes(_ digests: [Data], issuer: String, clientUserID: String, now: Date) async throws {
        let logger = logger
        try await write { db in
            try await db.run(
                "DELETE FROM recovery_codes WHERE issuer = \(issuer) AND client_user_id = \(clientUserID)",
                logger: logger)
            for digest in digests {
                try await db.run(
                    """
                    INSERT INTO recovery_codes (digest, issuer, client_user_id, created_at)
                    VALUES (\(digest), \(issuer), \(clientUserID), \(now.seconds))
                    """, logger: logger)
            }
        }
    }

    public func recoveryCodesLeft(issuer: String, clientUserID: String) async throws -> Int {
        let logger = logger
        return try await read { db in
            try await db.run(
                """
                SELECT 1 FROM recovery_codes
                WHERE issuer = \(issuer) AND client_user_id = \(clientUserID) AND used_at IS NULL
                """, logger: logger)
        }
    }
}
