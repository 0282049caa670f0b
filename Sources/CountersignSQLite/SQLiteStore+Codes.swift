public import CountersignCore
public import CountersignStore
public import Foundation
import GRDB

extension SQLiteStore {
    public func setTOTPSecret(_ sealed: Data, deviceID: String) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE devices SET totp_secret = ? WHERE id = ? AND revoked_at IS NULL AND totp_secret IS NULL",
                arguments: [sealed, deviceID])
            guard db.changesCount == 1 else {
                guard try Bool.fetchOne(db, sql: "SELECT 1 FROM devices WHERE id = ?", arguments: [deviceID]) != nil
                else { throw StoreError(.notFound, "no device \(deviceID)") }
                throw StoreError(.conflict, "the device has a TOTP secret already or is revoked")
            }
        }
    }

    public func reserveCodeAttempt(
        issuer: String, clientUserID: String, eventID: String?, limits: CodeLimits, now: Date
    ) async throws -> CodeAttempt {
        try await write { db in
            let t = now.timeIntervalSince1970
            let failures = try Row.fetchOne(
                db, sql: "SELECT consecutive, locked_until FROM code_failures WHERE issuer = ? AND client_user_id = ?",
                arguments: [issuer, clientUserID])
            try limits.refuseWhileLocked(
                until: (failures?["locked_until"] as Double?).map(Date.init(timeIntervalSince1970:)), now: now)
            var eventLeft: Int?
            if let eventID {
                let event = try Row.fetchOne(db, sql: Self.eventByID, arguments: [eventID]).map(Self.event(row:))
                eventLeft = try limits.attemptsLeft(
                    after: event, id: eventID, issuer: issuer, clientUserID: clientUserID, now: now)
                try db.execute(
                    sql: "UPDATE events SET code_attempts = code_attempts + 1, updated_at = ? WHERE id = ?",
                    arguments: [t, eventID])
            }
            let counted = (failures?["consecutive"] as Int? ?? 0) + 1
            try db.execute(
                sql: """
                    INSERT INTO code_failures (issuer, client_user_id, consecutive, locked_until, last_attempt_at)
                    VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (issuer, client_user_id)
                    DO UPDATE SET consecutive = excluded.consecutive, locked_until = excluded.locked_until,
                        last_attempt_at = excluded.last_attempt_at
                    """,
                arguments: [issuer, clientUserID, counted, limits.lockout(afterFailures: counted).map { t + $0 }, t])
            if let lockout = limits.lockout(afterFailures: counted) {
                try Self.announce(
                    [
                        WebhookNotice.accountLocked(
                            issuer: issuer, clientUserID: clientUserID, failures: counted, until: now + lockout,
                            now: now)
                    ], into: db)
            }
            return CodeAttempt(eventAttemptsLeft: eventLeft, consecutiveFailures: counted)
        }
    }

    public func acceptTOTPCode(deviceID: String, step: Int64, eventID: String?, now: Date) async throws
        -> ApprovalEvent?
    {
        try await write { db in
            let t = now.timeIntervalSince1970
            try db.execute(
                sql: """
                    UPDATE devices SET totp_last_step = ?
                    WHERE id = ? AND revoked_at IS NULL AND totp_secret IS NOT NULL
                      AND (totp_last_step IS NULL OR totp_last_step < ?)
                    """,
                arguments: [step, deviceID, step])
            guard db.changesCount == 1,
                let device = try Row.fetchOne(db, sql: Self.deviceByID, arguments: [deviceID]).map(Self.device(row:))
            else {
                throw StoreError(.conflict, "the device is revoked, has no TOTP secret, or used this step")
            }
            try db.execute(
                sql: "DELETE FROM code_failures WHERE issuer = ? AND client_user_id = ?",
                arguments: [device.issuer, device.clientUserID])
            guard let eventID else { return nil }
            try db.execute(
                sql: """
                    UPDATE events
                    SET status = 'approved', method = ?, decided_by = ?, decided_at = ?, updated_at = ?
                    WHERE id = ? AND status = 'pending' AND withdrawn_at IS NULL AND expires_at > ?
                      AND issuer = ? AND client_user_id = ?
                    """,
                arguments: [
                    AuthMethod.totp.rawValue, deviceID, t, t, eventID,
                    CodeLimits.codesTaken(expiringAfter: now).timeIntervalSince1970, device.issuer,
                    device.clientUserID,
                ])
            let settled = try Self.afterConditionalWrite(id: eventID, in: db)
            try Self.changed(settled, now: now, in: db)
            return settled
        }
    }

    public func replaceRecoveryCodes(_ digests: [Data], issuer: String, clientUserID: String, now: Date) async throws {
        try await write { db in
            try db.execute(
                sql: "DELETE FROM recovery_codes WHERE issuer = ? AND client_user_id = ?",
                arguments: [issuer, clientUserID])
            for digest in digests {
                try db.execute(
                    sql: "INSERT INTO recovery_codes (digest, issuer, client_user_id, created_at) VALUES (?, ?, ?, ?)",
                    arguments: [digest, issuer, clientUserID, now.timeIntervalSince1970])
            }
        }
    }

    public func recoveryCodesLeft(issuer: String, clientUserID: String) async throws -> Int {
        try read { db in
            try Int.fetchOne(
                db,
                sql: "SELECT count(*) FROM recovery_codes WHERE issuer = ? AND client_user_id = ? AND used_at IS NULL",
                arguments: [issuer, clientUserID]) ?? 0
        }
    }

    public func enrollDevice(
        _ device: TrustedDevice, consumingRecoveryCode digest: Data, author: ChangeAuthor, now: Date
    ) async throws {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE recovery_codes SET used_at = ?
                    WHERE digest = ? AND issuer = ? AND client_user_id = ? AND used_at IS NULL
                    """,
                arguments: [now.timeIntervalSince1970, digest, device.issuer, device.clientUserID])
            guard db.changesCount == 1 else {
                throw StoreError(.notFound, "no unused recovery code of this user has that digest")
            }
            // A duplicate key throws alreadyExists and rolls the code back.
            try Self.enroll(device, by: author, at: now, into: db)
        }
    }
}
