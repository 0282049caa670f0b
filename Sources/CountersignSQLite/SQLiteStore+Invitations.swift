public import CountersignCore
import CountersignStore
import Foundation
import GRDB

extension SQLiteStore {
    public func invitations(_ query: InvitationQuery) async throws -> [InvitationRecord] {
        // No stored id holds a NUL, and SQLite's binding would end the text at it.
        if query.findsNothing { return [] }
        // One SELECT (see read(_:)): the page's place is read in it, and an
        // unknown invitation compares with nothing.
        return try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    \(Self.invitationRecords)
                    WHERE (? IS NULL OR i.issuer = ?)
                        AND i.client_user_id >= ? AND i.client_user_id < ?
                        AND (? IS NULL
                            OR (i.created_at, i.id) < (SELECT created_at, id FROM invitations WHERE id = ?))
                        AND (? = 0 OR (i.withdrawn_at IS NULL AND i.expires_at > ? AND NOT EXISTS (
                            SELECT 1 FROM devices d WHERE d.issuer = i.issuer AND d.client_user_id = i.client_user_id
                                AND d.created_at >= i.created_at)))
                    ORDER BY i.created_at DESC, i.id DESC LIMIT ?
                    """,
                arguments: [
                    query.issuer, query.issuer, query.userPrefix, UserSummary.upperBound(ofPrefix: query.userPrefix),
                    query.before, query.before, query.openOnly, query.now.timeIntervalSince1970, query.limit,
                ]
            ).map(Self.invitationRecord(row:))
        }
    }

    public func invitation(id: String) async throws -> InvitationRecord? {
        if id.utf8.contains(0) { return nil }
        return try read { db in
            try Row.fetchOne(db, sql: "\(Self.invitationRecords) WHERE i.id = ?", arguments: [id])
                .map(Self.invitationRecord(row:))
        }
    }

    public func updateInvitations(
        issuer: String, clientUserID: String,
        _ change: @escaping @Sendable (InvitationUserState) throws -> InvitationChange
    ) async throws -> InvitationChange {
        try await write { db in
            let invitations = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM invitations
                    WHERE issuer = ? AND client_user_id = ? AND withdrawn_at IS NULL
                    ORDER BY created_at DESC, id DESC
                    """,
                arguments: [issuer, clientUserID]
            ).map(Self.invitation(row:))
            let devices = try Row.fetchAll(
                db,
                sql:
                    "SELECT \(Self.deviceColumns) FROM devices WHERE issuer = ? AND client_user_id = ? ORDER BY created_at, id",
                arguments: [issuer, clientUserID]
            ).map(Self.device(row:))
            let person = try Row.fetchOne(
                db, sql: "SELECT * FROM directory_people WHERE client_user_id = ?", arguments: [clientUserID]
            ).map(Self.person(row:))
            let after = try change(InvitationUserState(invitations: invitations, devices: devices, person: person))
            let withdrawnAt = after.withdrawnAt?.timeIntervalSince1970
            for invitation in after.withdrawn {
                try db.execute(
                    sql: "UPDATE invitations SET withdrawn_at = ? WHERE id = ? AND withdrawn_at IS NULL",
                    arguments: [withdrawnAt, invitation.id])
                try db.execute(
                    sql: "DELETE FROM enrollment_tokens WHERE digest = ? AND used_at IS NULL",
                    arguments: [invitation.tokenDigest])
                try db.execute(
                    sql: """
                        UPDATE outbox SET state = 'cancelled', finished_at = ?,
                            last_error = 'the invitation was withdrawn', claim = NULL, lease_until = NULL, payload = x''
                        WHERE id = ? AND state = 'queued'
                        """,
                    arguments: [withdrawnAt, invitation.messageID])
            }
            if let token = after.token { try Self.insert(token, into: db) }
            if let added = after.added {
                try db.execute(
                    sql: """
                        INSERT INTO invitations (id, issuer, client_user_id, email, token_digest, message_id,
                            invited_by, created_at, expires_at, withdrawn_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        added.id, added.issuer, added.clientUserID, added.email, added.tokenDigest, added.messageID,
                        added.invitedBy, added.createdAt.timeIntervalSince1970, added.expiresAt.timeIntervalSince1970,
                        added.withdrawnAt?.timeIntervalSince1970,
                    ])
            }
            if let mail = after.mail { try Self.insert([mail], into: db) }
            if let record = after.audit { try Self.insert(record, in: db) }
            return after
        }
    }

    /// The rows ``invitationRecord(row:)`` reads, for a `WHERE` on `i`, the
    /// invitation: with its mail's state and error, and when its user's first
    /// device at the app since was made (removed ones count: they enrolled).
    static let invitationRecords = """
        SELECT i.*, o.state AS mail_state, o.last_error AS mail_error,
            (SELECT min(d.created_at) FROM devices d
             WHERE d.issuer = i.issuer AND d.client_user_id = i.client_user_id AND d.created_at >= i.created_at)
            AS enrolled_at
        FROM invitations i LEFT JOIN outbox o ON o.id = i.message_id
        """

    /// An invitation from a row of `invitations`.
    static func invitation(row: Row) -> Invitation {
        Invitation(
            id: row["id"], issuer: row["issuer"], clientUserID: row["client_user_id"], email: row["email"],
            tokenDigest: row["token_digest"], messageID: row["message_id"], invitedBy: row["invited_by"],
            createdAt: Date(timeIntervalSince1970: row["created_at"]),
            expiresAt: Date(timeIntervalSince1970: row["expires_at"]),
            withdrawnAt: (row["withdrawn_at"] as Double?).map(Date.init(timeIntervalSince1970:)))
    }

    /// An invitation from a row of ``invitationRecords``.
    static func invitationRecord(row: Row) throws -> InvitationRecord {
        var mail: OutboxMessage.State?
        if let state = row["mail_state"] as String? {
            guard let known = OutboxMessage.State(rawValue: state) else {
                throw StoreError(.backend, "unreadable outbox state")
            }
            mail = known
        }
        return InvitationRecord(
            invitation: invitation(row: row), mail: mail, mailError: row["mail_error"],
            enrolledAt: (row["enrolled_at"] as Double?).map(Date.init(timeIntervalSince1970:)))
    }
}
