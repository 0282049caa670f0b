public import CountersignCore
public import CountersignStore
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

    public func reserveCodeAttempt(
        issuer: String, clientUserID: String, eventID: String?, limits: CodeLimits, now: Date
    ) async throws -> CodeAttempt {
        let logger = logger
        return try await write { db in
            let t = now.seconds
            let failures = try await db.row(
                """
                SELECT consecutive, locked_until FROM code_failures
                WHERE issuer = \(issuer) AND client_user_id = \(clientUserID)
                """, logger: logger)
            try limits.refuseWhileLocked(until: try failures?.optionalDate("locked_until"), now: now)
            var eventLeft: Int?
            if let eventID {
                let event = try await db.row("SELECT * FROM events WHERE id = \(eventID)", logger: logger)
                    .map(Self.event(row:))
                eventLeft = try limits.attemptsLeft(
                    after: event, id: eventID, issuer: issuer, clientUserID: clientUserID, now: now)
                try await db.run(
                    "UPDATE events SET code_attempts = code_attempts + 1, updated_at = \(t) WHERE id = \(eventID)",
                    logger: logger)
            }
            let counted = (try failures?.value("consecutive", as: Int.self) ?? 0) + 1
            let lockedUntil = limits.lockout(afterFailures: counted).map { t + $0 }
            try await db.run(
                """
                INSERT INTO code_failures (issuer, client_user_id, consecutive, locked_until, last_attempt_at)
                VALUES (\(issuer), \(clientUserID), \(counted), \(lockedUntil), \(t))
                ON CONFLICT (issuer, client_user_id)
                DO UPDATE SET consecutive = excluded.consecutive, locked_until = excluded.locked_until,
                    last_attempt_at = excluded.last_attempt_at
                """, logger: logger)
            if let lockout = limits.lockout(afterFailures: counted) {
                try await Self.announce(
                    [
                        WebhookNotice.accountLocked(
                            issuer: issuer, clientUserID: clientUserID, failures: counted, until: now + lockout,
                            now: now)
                    ], into: db, logger: logger)
            }
            return CodeAttempt(eventAttemptsLeft: eventLeft, consecutiveFailures: counted)
        }
    }

    public func acceptTOTPCode(deviceID: String, step: Int64, eventID: String?, now: Date) async throws
        -> ApprovalEvent?
    {
        let logger = logger
        return try await write { db in
            let t = now.seconds
            guard
                let row = try await db.row(
                    """
                    UPDATE devices SET totp_last_step = \(step)
                    WHERE id = \(deviceID) AND revoked_at IS NULL AND totp_secret IS NOT NULL
                      AND (totp_last_step IS NULL OR totp_last_step < \(step))
                    RETURNING *
                    """, logger: logger)
            else { throw StoreError(.conflict, "the device is revoked, has no TOTP secret, or used this step") }
            let device = try Self.device(row: row)
            try await db.run(
                "DELETE FROM code_failures WHERE issuer = \(device.issuer) AND client_user_id = \(device.clientUserID)",
                logger: logger)
            guard let eventID else { return nil }
            let changed = try await db.run(
                """
                UPDATE events
                SET status = 'approved', method = \(AuthMethod.totp.rawValue), decided_by = \(deviceID),
                    decided_at = \(t), updated_at = \(t)
                WHERE id = \(eventID) AND status = 'pending' AND withdrawn_at IS NULL
                  AND expires_at > \(CodeLimits.codesTaken(expiringAfter: now).seconds)
                  AND issuer = \(device.issuer) AND client_user_id = \(device.clientUserID)
                RETURNING 1
                """, logger: logger)
            let settled = try await Self.afterConditionalWrite(id: eventID, changed: changed, in: db, logger: logger)
            try await Self.changed(settled, now: now, in: db, logger: logger)
            return settled
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
