public import CountersignCore
import CountersignStore
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

    public func updateCodes<Outcome: Sendable>(
        issuer: String, clientUserID: String, eventID: String?, deviceID: String?, now: Date,
        _ change: @escaping @Sendable (CodeState) throws -> (CodeChange, Outcome)
    ) async throws -> Outcome {
        try await write { db in
            let failures = try Row.fetchOne(
                db,
                sql: """
                    SELECT consecutive, locked_until, last_attempt_at FROM code_failures
                    WHERE issuer = ? AND client_user_id = ?
                    """,
                arguments: [issuer, clientUserID]
            ).map {
                CodeFailures(
                    consecutive: $0["consecutive"],
                    lockedUntil: ($0["locked_until"] as Double?).map(Date.init(timeIntervalSince1970:)),
                    lastAttemptAt: ($0["last_attempt_at"] as Double?).map(Date.init(timeIntervalSince1970:)))
            }
            let event = try eventID.flatMap { try Self.event(id: $0, in: db) }
            let device = try deviceID.flatMap { try Self.device(id: $0, in: db) }
            let before = CodeState(failures: failures ?? .none, event: event, device: device)
            let (after, outcome) = try change(before)
            if after.failures == .none {
                try db.execute(
                    sql: "DELETE FROM code_failures WHERE issuer = ? AND client_user_id = ?",
                    arguments: [issuer, clientUserID])
            } else {
                try db.execute(
                    sql: """
                        INSERT INTO code_failures (issuer, client_user_id, consecutive, locked_until, last_attempt_at)
                        VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (issuer, client_user_id)
                        DO UPDATE SET consecutive = excluded.consecutive, locked_until = excluded.locked_until,
                            last_attempt_at = excluded.last_attempt_at
                        """,
                    arguments: [
                        issuer, clientUserID, after.failures.consecutive,
                        after.failures.lockedUntil?.timeIntervalSince1970,
                        after.failures.lastAttemptAt?.timeIntervalSince1970,
                    ])
            }
            if let step = after.acceptedStep, let deviceID {
                try db.execute(sql: "UPDATE devices SET totp_last_step = ? WHERE id = ?", arguments: [step, deviceID])
            }
            if let changed = after.event {
                try Self.update(changed, in: db)
                if changed.storedStatus != event?.storedStatus { try Self.changed(changed, now: now, in: db) }
            }
            try Self.announce(after.notices, into: db)
            return outcome
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
