public import CountersignCore
import CountersignStore
public import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    public func insertEnrollmentToken(_ token: EnrollmentToken) async throws {
        let logger = logger
        try await write { db in try await Self.insert(token, into: db, logger: logger) }
    }

    /// Writes an enrollment token (a backend's, or an invitation's).
    static func insert(_ token: EnrollmentToken, into db: PostgresSession, logger: Logger) async throws {
        _ = try await db.run(
            """
            INSERT INTO enrollment_tokens (digest, issuer, client_user_id, created_at, expires_at, used_at)
            VALUES (\(token.digest), \(token.issuer), \(token.clientUserID), \(token.createdAt.seconds),
                    \(token.expiresAt.seconds), \(token.usedAt?.seconds))
            """, logger: logger)
    }

    public func enrollDevice(_ device: TrustedDevice, consumingToken digest: Data, author: ChangeAuthor, now: Date)
        async throws
    {
        let logger = logger
        // READ COMMITTED: the token's conditional UPDATE is the only read,
        // and its row lock orders two enrollments with one token. As a
        // SERIALIZABLE transaction, enrollments at once failed each other
        // on shared index pages until their retries ran out (503).
        try await readCommittedWrite { db in
            let used = try await db.run(
                """
                UPDATE enrollment_tokens SET used_at = \(now.seconds)
                WHERE digest = \(digest) AND issuer = \(device.issuer) AND client_user_id = \(device.clientUserID)
                  AND used_at IS NULL AND expires_at > \(now.seconds)
                RETURNING 1
                """, logger: logger)
            guard used == 1 else { throw StoreError(.notFound, "no usable enrollment token for this user") }
            try await Self.enroll(device, by: author, at: now, into: db, logger: logger)
        }
    }

    public func enrollFirstDevice(_ device: TrustedDevice, author: ChangeAuthor, now: Date) async throws {
        let logger = logger
        try await write { db in
            let live = try await db.run(
                """
                SELECT 1 FROM devices
                WHERE issuer = \(device.issuer) AND client_user_id = \(device.clientUserID) AND revoked_at IS NULL
                """, logger: logger)
            guard live == 0 else {
                throw StoreError(.conflict, "the user has a trusted device; it must approve new ones")
            }
            try await Self.enroll(device, by: author, at: now, into: db, logger: logger)
        }
    }

    public func enrollDevice(
        _ device: TrustedDevice, consumingRecoveryCode digest: Data, author: ChangeAuthor, now: Date
    ) async throws {
        let logger = logger
        // READ COMMITTED, as with a token (above).
        try await readCommittedWrite { db in
            let used = try await db.run(
                """
                UPDATE recovery_codes SET used_at = \(now.seconds)
                WHERE digest = \(digest) AND issuer = \(device.issuer) AND client_user_id = \(device.clientUserID)
                  AND used_at IS NULL
                RETURNING 1
                """, logger: logger)
            guard used == 1 else { throw StoreError(.notFound, "no unused recovery code of this user has that digest") }
            try await Self.enroll(device, by: author, at: now, into: db, logger: logger)
        }
    }

    public func device(id: String) async throws -> TrustedDevice? {
        let logger = logger
        return try await read { db in
            try await db.row("SELECT * FROM devices WHERE id = \(id)", logger: logger).map(Self.device(row:))
        }
    }

    public func deviceWithAPIKey(id: String) async throws -> (TrustedDevice, APIKey?)? {
        let logger = logger
        return try await read { db in
            // The key's columns named apart from the device's: key_id, key_name…
            guard
                let row = try await db.row(
                    """
                    SELECT devices.*, \(unescaped: Self.prefixedAPIKeyColumns),
                        array(SELECT event FROM quorum_policies WHERE issuer = k.id) AS key_quorum_events
                    FROM devices LEFT JOIN api_keys AS k ON k.id = devices.issuer AND k.revoked_at IS NULL
                    WHERE devices.id = \(id)
                    """, logger: logger)
            else { return nil }
            var key = try row.value("key_id", as: String?.self) == nil ? nil : try Self.apiKey(row: row, prefix: "key_")
            key?.quorumPolicyEvents = Set(try row.value("key_quorum_events", as: [String].self))
            return (try Self.device(row: row), key)
        }
    }

    public func devices(issuer: String, clientUserID: String) async throws -> [TrustedDevice] {
        let logger = logger
        return try await read { db in
            try await db.rows(
                """
                SELECT * FROM devices WHERE issuer = \(issuer) AND client_user_id = \(clientUserID)
                ORDER BY created_at, id
                """, logger: logger
            ).map(Self.device(row:))
        }
    }

    public func revokeDevice(id: String, issuer: String, clientUserID: String, author: ChangeAuthor, now: Date)
        async throws -> TrustedDevice
    {
        let logger = logger
        return try await write { db in
            let revokedNow =
                try await db.run(
                    """
                    UPDATE devices SET revoked_at = \(now.seconds), push_endpoint = NULL, push_p256dh = NULL,
                        push_auth = NULL, push_vapid_key = NULL, push_updated_at = NULL,
                        passkey_credential_id = NULL, passkey_public_key = NULL, passkey_sign_count = NULL,
                        passkey_aaguid = NULL, passkey_transports = NULL, passkey_backup_eligible = NULL,
                        passkey_created_at = NULL
                    WHERE id = \(id) AND issuer = \(issuer) AND client_user_id = \(clientUserID) AND revoked_at IS NULL
                    RETURNING 1
                    """, logger: logger) == 1
            guard
                let row = try await db.row(
                    "SELECT * FROM devices WHERE id = \(id) AND issuer = \(issuer) AND client_user_id = \(clientUserID)",
                    logger: logger)
            else { throw StoreError(.notFound, "no such device for this user") }
            let device = try Self.device(row: row)
            if revokedNow {
                try await Self.record(DeviceChange(.revoked, of: device, by: author, at: now), into: db, logger: logger)
                // The revoked device's inbox long-polls, on every instance, end now.
                db.notify(WakeKey.inbox(issuer: issuer, user: clientUserID))
            }
            return device
        }
    }

    public func deviceChanges(issuer: String, clientUserID: String, limit: Int) async throws -> [DeviceChange] {
        let logger = logger
        return try await read { db in
            try await db.rows(
                """
                SELECT * FROM device_changes WHERE issuer = \(issuer) AND client_user_id = \(clientUserID)
                ORDER BY id DESC LIMIT \(limit)
                """, logger: logger
            ).map { row in
                guard let action = DeviceChange.Action(rawValue: try row.value("action")) else {
                    throw StoreError(.backend, "unreadable device change row")
                }
                return DeviceChange(
                    issuer: try row.value("issuer"), clientUserID: try row.value("client_user_id"),
                    deviceID: try row.value("device_id"), deviceName: try row.value("device_name"), action: action,
                    author: ChangeAuthor(actor: try row.value("actor"), ip: try row.value("ip")),
                    at: try row.date("at"))
            }
        }
    }

    public func markDeviceSeen(id: String, now: Date) async throws {
        try await writeStatement(
            "UPDATE devices SET last_seen_at = greatest(coalesce(last_seen_at, 0), \(now.seconds)) WHERE id = \(id)")
    }

    static func record(_ change: DeviceChange, into db: PostgresSession, logger: Logger) async throws {
        try await db.run(
            """
            INSERT INTO device_changes (issuer, client_user_id, device_id, device_name, action, actor, ip, at)
            VALUES (\(change.issuer), \(change.clientUserID), \(change.deviceID), \(change.deviceName),
                    \(change.action.rawValue), \(change.author.actor), \(change.author.ip), \(change.at.seconds))
            """, logger: logger)
        try await announce(WebhookNotice.device(change), into: db, logger: logger)
    }

    public func setPasskey(_ passkey: Passkey?, deviceID: String, by author: ChangeAuthor, at now: Date)
        async throws
    {
        let logger = logger
        let publicKey = try passkey.map { String(decoding: try JSONEncoder().encode($0.publicKey), as: UTF8.self) }
        try await readCommittedWrite { db in
            // Removing a passkey that is not there changes, and records, nothing.
            let row = try await db.row(
                """
                UPDATE devices SET passkey_credential_id = \(passkey?.credentialID),
                    passkey_public_key = \(publicKey), passkey_sign_count = \(passkey.map { Int64($0.signCount) }),
                    passkey_aaguid = \(passkey?.aaguid.uuidString.lowercased()),
                    passkey_transports = \(passkey?.transports.joined(separator: ",")),
                    passkey_backup_eligible = \(passkey?.backupEligible),
                    passkey_created_at = \(passkey?.createdAt.seconds)
                WHERE id = \(deviceID) AND revoked_at IS NULL
                  AND (\(passkey != nil) OR passkey_credential_id IS NOT NULL)
                RETURNING *
                """, logger: logger)
            guard let row else {
                let unrevoked = try await db.row(
                    "SELECT 1 FROM devices WHERE id = \(deviceID) AND revoked_at IS NULL", logger: logger)
                guard unrevoked != nil else { throw try await Self.unwritable(deviceID, in: db, logger: logger) }
                return
            }
            let change = DeviceChange(
                passkey == nil ? .passkeyRemoved : .passkeyAdded, of: try Self.device(row: row), by: author, at: now)
            try await Self.record(change, into: db, logger: logger)
        }
    }

    public func advancePasskeySignCount(deviceID: String, credentialID: String, to signCount: UInt32) async throws {
        let logger = logger
        try await readCommittedWrite { db in
            try await Self.advanceSignCount(
                deviceID: deviceID, credentialID: credentialID, to: signCount, in: db, logger: logger)
        }
    }

    /// The counter write of a passkey's use, inside the caller's transaction.
    static func advanceSignCount(
        deviceID: String, credentialID: String, to signCount: UInt32, in db: PostgresSession, logger: Logger
    ) async throws {
        let count = Int64(signCount)
        let counted = try await db.run(
            """
            UPDATE devices SET passkey_sign_count = \(count)
            WHERE id = \(deviceID) AND passkey_credential_id = \(credentialID)
              AND (passkey_sign_count < \(count) OR (\(count) = 0 AND passkey_sign_count = 0))
            RETURNING 1
            """, logger: logger)
        guard counted == 1 else {
            throw StoreError(.conflict, "the passkey changed, or its counter went past \(count), meanwhile")
        }
    }

    /// Why a write to an unrevoked device changed nothing: `notFound` for
    /// an unknown device, `conflict` for a revoked one.
    static func unwritable(_ deviceID: String, in db: PostgresSession, logger: Logger) async throws -> StoreError {
        let known = try await db.row("SELECT 1 FROM devices WHERE id = \(deviceID)", logger: logger) != nil
        return known ? StoreError(.conflict, "the device is revoked") : StoreError(.notFound, "no such device")
    }

    /// Adds a trusted device and records its enrollment by `author`; a
    /// duplicate key throws `alreadyExists`, rolling the caller's write back.
    static func enroll(
        _ device: TrustedDevice, by author: ChangeAuthor, at now: Date, into db: PostgresSession, logger: Logger
    ) async throws {
        let publicKey = String(decoding: try JSONEncoder().encode(device.publicKey), as: UTF8.self)
        try await db.run(
            """
            INSERT INTO devices (id, issuer, client_user_id, public_key, name, type, created_at, last_seen_at)
            VALUES (\(device.id), \(device.issuer), \(device.clientUserID), \(publicKey), \(device.name),
                    \(device.type), \(device.createdAt.seconds), \(device.lastSeenAt?.seconds))
            """, logger: logger)
        try await record(DeviceChange(.enrolled, of: device, by: author, at: now), into: db, logger: logger)
    }

    static func device(row: PostgresRandomAccessRow) throws -> TrustedDevice {
        TrustedDevice(
            storedID: try row.value("id"), publicKey: try DevicePublicKey.stored(try row.value("public_key")),
            issuer: try row.value("issuer"), clientUserID: try row.value("client_user_id"),
            name: try row.value("name"), type: try row.value("type"), createdAt: try row.date("created_at"),
            lastSeenAt: try row.optionalDate("last_seen_at"), revokedAt: try row.optionalDate("revoked_at"),
            sealedTOTPSecret: try row.value("totp_secret"), lastTOTPStep: try row.value("totp_last_step"),
            push: try pushSubscription(row: row), passkey: try passkey(row: row),
            suspendedAt: try row.optionalDate("suspended_at"))
    }

    private static func passkey(row: PostgresRandomAccessRow) throws -> Passkey? {
        guard let credentialID = try row.value("passkey_credential_id", as: String?.self),
            let publicKey = try row.value("passkey_public_key", as: String?.self),
            let signCount = try row.value("passkey_sign_count", as: Int64?.self),
            let aaguid = try row.value("passkey_aaguid", as: String?.self).flatMap(UUID.init(uuidString:)),
            let transports = try row.value("passkey_transports", as: String?.self),
            let backupEligible = try row.value("passkey_backup_eligible", as: Bool?.self),
            let createdAt = try row.optionalDate("passkey_created_at")
        else { return nil }
        return Passkey(
            credentialID: credentialID, publicKey: try DevicePublicKey.stored(publicKey),
            signCount: UInt32(clamping: signCount), aaguid: aaguid,
            transports: transports.split(separator: ",").map(String.init), backupEligible: backupEligible,
            createdAt: createdAt)
    }

    private static func pushSubscription(row: PostgresRandomAccessRow) throws -> PushSubscription? {
        guard let endpoint = try row.value("push_endpoint", as: String?.self),
            let p256dh = try row.value("push_p256dh", as: Data?.self),
            let auth = try row.value("push_auth", as: Data?.self),
            let vapidKeyID = try row.value("push_vapid_key", as: String?.self),
            let updatedAt = try row.optionalDate("push_updated_at")
        else { return nil }
        return PushSubscription(
            endpoint: endpoint, p256dh: p256dh, auth: auth, vapidKeyID: vapidKeyID, updatedAt: updatedAt)
    }
}
