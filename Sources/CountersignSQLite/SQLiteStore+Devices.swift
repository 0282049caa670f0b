public import CountersignCore
import CountersignStore
public import Foundation
import GRDB

extension SQLiteStore {
    public func insertEnrollmentToken(_ token: EnrollmentToken) async throws {
        try await write { db in try Self.insert(token, into: db) }
    }

    /// Writes an enrollment token (a backend's, or an invitation's).
    static func insert(_ token: EnrollmentToken, into db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO enrollment_tokens (digest, issuer, client_user_id, created_at, expires_at, used_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                token.digest, token.issuer, token.clientUserID, token.createdAt.timeIntervalSince1970,
                token.expiresAt.timeIntervalSince1970, token.usedAt?.timeIntervalSince1970,
            ])
    }

    public func enrollDevice(_ device: TrustedDevice, consumingToken digest: Data, author: ChangeAuthor, now: Date)
        async throws
    {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE enrollment_tokens SET used_at = ?
                    WHERE digest = ? AND issuer = ? AND client_user_id = ? AND used_at IS NULL AND expires_at > ?
                    """,
                arguments: [
                    now.timeIntervalSince1970, digest, device.issuer, device.clientUserID, now.timeIntervalSince1970,
                ])
            guard db.changesCount == 1 else {
                throw StoreError(.notFound, "no usable enrollment token for this user")
            }
            // A duplicate key throws alreadyExists and rolls the token back.
            try Self.enroll(device, by: author, at: now, into: db)
        }
    }

    public func enrollFirstDevice(_ device: TrustedDevice, author: ChangeAuthor, now: Date) async throws {
        try await write { db in
            let live =
                try Int.fetchOne(
                    db,
                    sql: "SELECT count(*) FROM devices WHERE issuer = ? AND client_user_id = ? AND revoked_at IS NULL",
                    arguments: [device.issuer, device.clientUserID]) ?? 0
            guard live == 0 else {
                throw StoreError(.conflict, "the user has a trusted device; it must approve new ones")
            }
            try Self.enroll(device, by: author, at: now, into: db)
        }
    }

    public func device(id: String) async throws -> TrustedDevice? {
        try read { db in try Self.device(id: id, in: db) }
    }

    public func deviceWithAPIKey(id: String) async throws -> (TrustedDevice, APIKey?)? {
        try read { db in
            guard let device = try Self.device(id: id, in: db) else { return nil }
            return (device, try Self.apiKey(id: device.issuer, in: db))
        }
    }

    public func devices(issuer: String, clientUserID: String) async throws -> [TrustedDevice] {
        try read { db in try Self.devices(issuer: issuer, clientUserID: clientUserID, in: db) }
    }

    static func devices(issuer: String, clientUserID: String, in db: Database) throws -> [TrustedDevice] {
        try Row.fetchAll(
            db.cachedStatement(
                sql:
                    "SELECT \(deviceColumns) FROM devices WHERE issuer = ? AND client_user_id = ? ORDER BY created_at, id"
            ),
            arguments: [issuer, clientUserID]
        ).map(device(row:))
    }

    public func revokeDevice(id: String, issuer: String, clientUserID: String, author: ChangeAuthor, now: Date)
        async throws -> TrustedDevice
    {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE devices SET revoked_at = ?, \(Self.noPush), \(Self.noPasskey)
                    WHERE id = ? AND issuer = ? AND client_user_id = ? AND revoked_at IS NULL
                    """,
                arguments: [now.timeIntervalSince1970, id, issuer, clientUserID])
            let revokedNow = db.changesCount == 1
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "SELECT \(Self.deviceColumns) FROM devices WHERE id = ? AND issuer = ? AND client_user_id = ?",
                    arguments: [id, issuer, clientUserID])
            else {
                throw StoreError(.notFound, "no such device for this user")
            }
            let device = try Self.device(row: row)
            if revokedNow { try Self.record(DeviceChange(.revoked, of: device, by: author, at: now), into: db) }
            return device
        }
    }

    public func deviceChanges(issuer: String, clientUserID: String, limit: Int) async throws -> [DeviceChange] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM device_changes WHERE issuer = ? AND client_user_id = ?
                    ORDER BY id DESC LIMIT ?
                    """,
                arguments: [issuer, clientUserID, limit]
            ).map { row in
                guard let action = DeviceChange.Action(rawValue: row["action"]) else {
                    throw StoreError(.backend, "unreadable device change row")
                }
                return DeviceChange(
                    issuer: row["issuer"], clientUserID: row["client_user_id"], deviceID: row["device_id"],
                    deviceName: row["device_name"], action: action,
                    author: ChangeAuthor(actor: row["actor"], ip: row["ip"]),
                    at: Date(timeIntervalSince1970: row["at"]))
            }
        }
    }

    static func record(_ change: DeviceChange, into db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO device_changes (issuer, client_user_id, device_id, device_name, action, actor, ip, at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                change.issuer, change.clientUserID, change.deviceID, change.deviceName, change.action.rawValue,
                change.author.actor, change.author.ip, change.at.timeIntervalSince1970,
            ])
        try announce(WebhookNotice.device(change), into: db)
    }

    public func markDeviceSeen(id: String, now: Date) async throws {
        try await write { db in
            try db.cachedStatement(
                sql: "UPDATE devices SET last_seen_at = max(coalesce(last_seen_at, 0), ?) WHERE id = ?"
            )
            .execute(arguments: [now.timeIntervalSince1970, id])
        }
    }

    static let noPasskey = """
        passkey_credential_id = NULL, passkey_public_key = NULL, passkey_sign_count = NULL, passkey_aaguid = NULL, \
        passkey_transports = NULL, passkey_backup_eligible = NULL, passkey_created_at = NULL
        """

    public func setPasskey(_ passkey: Passkey?, deviceID: String, by author: ChangeAuthor, at now: Date)
        async throws
    {
        try await write { db in
            if let passkey {
                try db.execute(
                    sql: """
                        UPDATE devices SET passkey_credential_id = ?, passkey_public_key = ?, passkey_sign_count = ?,
                            passkey_aaguid = ?, passkey_transports = ?, passkey_backup_eligible = ?,
                            passkey_created_at = ?
                        WHERE id = ? AND revoked_at IS NULL
                        """,
                    arguments: [
                        passkey.credentialID,
                        String(decoding: try JSONEncoder().encode(passkey.publicKey), as: UTF8.self),
                        Int64(passkey.signCount), passkey.aaguid.uuidString.lowercased(),
                        passkey.transports.joined(separator: ","), passkey.backupEligible,
                        passkey.createdAt.timeIntervalSince1970, deviceID,
                    ])
            } else {
                // Removing a passkey that is not there changes, and records, nothing.
                try db.execute(
                    sql: """
                        UPDATE devices SET \(Self.noPasskey)
                        WHERE id = ? AND revoked_at IS NULL AND passkey_credential_id IS NOT NULL
                        """,
                    arguments: [deviceID])
            }
            guard db.changesCount == 0 else {
                guard
                    let row = try Row.fetchOne(
                        db, sql: "SELECT \(Self.deviceColumns) FROM devices WHERE id = ?", arguments: [deviceID])
                else { throw StoreError(.backend, "the device changed went missing") }
                let change = DeviceChange(
                    passkey == nil ? .passkeyRemoved : .passkeyAdded, of: try Self.device(row: row), by: author,
                    at: now)
                return try Self.record(change, into: db)
            }
            let unrevoked = try Bool.fetchOne(
                db, sql: "SELECT 1 FROM devices WHERE id = ? AND revoked_at IS NULL", arguments: [deviceID])
            guard unrevoked != nil else { throw try Self.unwritable(deviceID, in: db) }
        }
    }

    public func advancePasskeySignCount(deviceID: String, credentialID: String, to signCount: UInt32) async throws {
        try await write { db in
            try Self.advanceSignCount(deviceID: deviceID, credentialID: credentialID, to: signCount, in: db)
        }
    }

    /// The counter write of a passkey's use, inside the caller's transaction.
    static func advanceSignCount(deviceID: String, credentialID: String, to count: UInt32, in db: Database) throws {
        try db.cachedStatement(
            sql: """
                UPDATE devices SET passkey_sign_count = ?
                WHERE id = ? AND passkey_credential_id = ?
                  AND (passkey_sign_count < ? OR (? = 0 AND passkey_sign_count = 0))
                """
        ).execute(arguments: [Int64(count), deviceID, credentialID, Int64(count), Int64(count)])
        guard db.changesCount == 1 else {
            throw StoreError(.conflict, "the passkey changed, or its counter went past \(count), meanwhile")
        }
    }

    /// Why a write to an unrevoked device changed nothing: `notFound` for
    /// an unknown device, `conflict` for a revoked one.
    static func unwritable(_ deviceID: String, in db: Database) throws -> StoreError {
        let revoked = try Bool.fetchOne(
            db, sql: "SELECT revoked_at IS NOT NULL FROM devices WHERE id = ?", arguments: [deviceID])
        return revoked == nil ? StoreError(.notFound, "no such device") : StoreError(.conflict, "the device is revoked")
    }

    /// Adds a trusted device and records its enrollment by `author`; a
    /// duplicate key throws `alreadyExists`, rolling the caller's write back.
    static func enroll(_ device: TrustedDevice, by author: ChangeAuthor, at now: Date, into db: Database) throws {
        let publicKey = String(decoding: try JSONEncoder().encode(device.publicKey), as: UTF8.self)
        try db.execute(
            sql: """
                INSERT INTO devices (id, issuer, client_user_id, public_key, name, type, created_at, last_seen_at, revoked_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)
                """,
            arguments: [
                device.id, device.issuer, device.clientUserID, publicKey, device.name, device.type,
                device.createdAt.timeIntervalSince1970, device.lastSeenAt?.timeIntervalSince1970,
            ])
        try record(DeviceChange(.enrolled, of: device, by: author, at: now), into: db)
    }

    /// The columns ``device(row:)`` reads, in its order (by position, as
    /// for events).
    static let deviceColumns = """
        id, public_key, issuer, client_user_id, name, type, created_at, last_seen_at, revoked_at, totp_secret, \
        totp_last_step, push_endpoint, push_p256dh, push_auth, push_vapid_key, push_updated_at, \
        passkey_credential_id, passkey_public_key, passkey_sign_count, passkey_aaguid, passkey_transports, \
        passkey_backup_eligible, passkey_created_at, suspended_at
        """

    static let deviceByID = "SELECT \(deviceColumns) FROM devices WHERE id = ?"

    /// The device with this id, revoked or not, or nil.
    static func device(id: String, in db: Database) throws -> TrustedDevice? {
        try Row.fetchOne(db.cachedStatement(sql: deviceByID), arguments: [id]).map(device(row:))
    }

    /// A device from a row of `SELECT \(deviceColumns)`.
    static func device(row: Row) throws -> TrustedDevice {
        TrustedDevice(
            storedID: row[0], publicKey: try DevicePublicKey.stored(row[1]), issuer: row[2], clientUserID: row[3],
            name: row[4], type: row[5], createdAt: Date(timeIntervalSince1970: row[6]),
            lastSeenAt: (row[7] as Double?).map(Date.init(timeIntervalSince1970:)),
            revokedAt: (row[8] as Double?).map(Date.init(timeIntervalSince1970:)),
            sealedTOTPSecret: row[9], lastTOTPStep: row[10], push: pushSubscription(row: row),
            passkey: try passkey(row: row), suspendedAt: (row[23] as Double?).map(Date.init(timeIntervalSince1970:)))
    }

    private static func passkey(row: Row) throws -> Passkey? {
        guard let credentialID = row[16] as String?, let publicKey = row[17] as String?,
            let signCount = row[18] as Int64?, let aaguid = (row[19] as String?).flatMap(UUID.init(uuidString:)),
            let transports = row[20] as String?, let backupEligible = row[21] as Bool?,
            let createdAt = row[22] as Double?
        else { return nil }
        return Passkey(
            credentialID: credentialID, publicKey: try DevicePublicKey.stored(publicKey),
            signCount: UInt32(clamping: signCount), aaguid: aaguid,
            transports: transports.split(separator: ",").map(String.init), backupEligible: backupEligible,
            createdAt: Date(timeIntervalSince1970: createdAt))
    }

    private static func pushSubscription(row: Row) -> PushSubscription? {
        guard let endpoint = row[11] as String?, let p256dh = row[12] as Data?, let auth = row[13] as Data?,
            let vapidKeyID = row[14] as String?, let updatedAt = row[15] as Double?
        else { return nil }
        return PushSubscription(
            endpoint: endpoint, p256dh: p256dh, auth: auth, vapidKeyID: vapidKeyID,
            updatedAt: Date(timeIntervalSince1970: updatedAt))
    }
}
