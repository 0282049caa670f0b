public import CountersignCore
import CountersignStore
import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    public func invitations(_ query: InvitationQuery) async throws -> [InvitationRecord] {
        // No stored id holds a NUL, and PostgreSQL refuses text with one.
        if query.findsNothing { return [] }
        let upper = UserSummary.upperBound(ofPrefix: query.userPrefix)
        let logger = logger
        // Past the page's place: made before it, or at its time with a
        // smaller id (in byte order, as SQLite compares them); an unknown
        // invitation compares with nothing.
        return try await read { db in
            try await db.rows(
                """
                \(unescaped: Self.invitationRecords)
                WHERE (\(query.issuer)::text IS NULL OR i.issuer = \(query.issuer))
                    AND i.client_user_id COLLATE "C" >= \(query.userPrefix)
                    AND i.client_user_id COLLATE "C" < \(upper)
                    AND (\(query.before)::text IS NULL OR (i.created_at, i.id COLLATE "C") < (
                        SELECT b.created_at, b.id COLLATE "C" FROM invitations b WHERE b.id = \(query.before)))
                    AND (NOT \(query.openOnly) OR (i.withdrawn_at IS NULL AND i.expires_at > \(query.now.seconds)
                        AND NOT EXISTS (
                            SELECT 1 FROM devices d WHERE d.issuer = i.issuer AND d.client_user_id = i.client_user_id
                                AND d.created_at >= i.created_at)))
                ORDER BY i.created_at DESC, i.id COLLATE "C" DESC LIMIT \(query.limit)
                """, logger: logger
            ).map(Self.invitationRecord(row:))
        }
    }

    public func invitation(id: String) async throws -> InvitationRecord? {
        if id.utf8.contains(0) { return nil }
        let logger = logger
        return try await read { db in
            try await db.row("\(unescaped: Self.invitationRecords) WHERE i.id = \(id)", logger: logger)
                .map(Self.invitationRecord(row:))
        }
    }

    public func updateInvitations(
        issuer: String, clientUserID: String,
        _ change: @escaping @Sendable (InvitationUserState) throws -> InvitationChange
    ) async throws -> InvitationChange {
        let logger = logger
        // READ COMMITTED: the lock on the user orders the changes of their
        // invitations (a first one has no row to lock). Their devices are
        // locked first, as a revocation or a suspension takes them, and
        // their directory entry after, shared, as the directory's updater
        // takes it after the devices: an invitation is decided on the
        // devices and entry it finds, not on ones changing under it. An
        // enrollment by a withdrawn link is ordered by its token's row.
        return try await update(locking: "invitations:\(issuer)/\(clientUserID)") { db in
            let devices = try await db.rows(
                """
                SELECT * FROM devices WHERE issuer = \(issuer) AND client_user_id = \(clientUserID)
                ORDER BY created_at, id FOR UPDATE
                """, logger: logger
            ).map(Self.device(row:))
            let invitations = try await db.rows(
                """
                SELECT * FROM invitations
                WHERE issuer = \(issuer) AND client_user_id = \(clientUserID) AND withdrawn_at IS NULL
                ORDER BY created_at DESC, id COLLATE "C" DESC FOR UPDATE
                """, logger: logger
            ).map(Self.invitation(row:))
            let person = try await db.row(
                "SELECT * FROM directory_people WHERE client_user_id = \(clientUserID) FOR SHARE", logger: logger
            ).map(Self.person(row:))
            let after = try Self.applying {
                try change(InvitationUserState(invitations: invitations, devices: devices, person: person))
            }
            let withdrawnAt = after.withdrawnAt?.seconds
            for invitation in after.withdrawn {
                try await db.run(
                    """
                    UPDATE invitations SET withdrawn_at = \(withdrawnAt)
                    WHERE id = \(invitation.id) AND withdrawn_at IS NULL
                    """, logger: logger)
                try await db.run(
                    "DELETE FROM enrollment_tokens WHERE digest = \(invitation.tokenDigest) AND used_at IS NULL",
                    logger: logger)
                try await db.run(
                    """
                    UPDATE outbox SET state = 'cancelled', finished_at = \(withdrawnAt),
                        last_error = 'the invitation was withdrawn', claim = NULL, lease_until = NULL,
                        payload = ''::bytea
                    WHERE id = \(invitation.messageID) AND state = 'queued'
                    """, logger: logger)
            }
            if let token = after.token { try await Self.insert(token, into: db, logger: logger) }
            if let added = after.added {
                try await db.run(
                    """
                    INSERT INTO invitations (id, issuer, client_user_id, email, token_digest, message_id, invited_by,
                        created_at, expires_at, withdrawn_at)
                    VALUES (\(added.id), \(added.issuer), \(added.clientUserID), \(added.email), \(added.tokenDigest),
                        \(added.messageID), \(added.invitedBy), \(added.createdAt.seconds), \(added.expiresAt.seconds),
                        \(added.withdrawnAt?.seconds))
                    """, logger: logger)
            }
            if let mail = after.mail { try Self.insert([mail], into: db, logger: logger) }
            if let record = after.audit { _ = try await Self.insert(record, in: db, logger: logger) }
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
    static func invitation(row: PostgresRandomAccessRow) throws -> Invitation {
        Invitation(
            id: try row.value("id"), issuer: try row.value("issuer"), clientUserID: try row.value("client_user_id"),
            email: try row.value("email"), tokenDigest: try row.value("token_digest"),
            messageID: try row.value("message_id"), invitedBy: try row.value("invited_by"),
            createdAt: try row.date("created_at"), expiresAt: try row.date("expires_at"),
            withdrawnAt: try row.optionalDate("withdrawn_at"))
    }

    /// An invitation from a row of ``invitationRecords``.
    static func invitationRecord(row: PostgresRandomAccessRow) throws -> InvitationRecord {
        var mail: OutboxMessage.State?
        if let state = try row.value("mail_state", as: String?.self) {
            guard let known = OutboxMessage.State(rawValue: state) else {
                throw StoreError(.backend, "unreadable outbox state")
            }
            mail = known
        }
        return InvitationRecord(
            invitation: try invitation(row: row), mail: mail, mailError: try row.value("mail_error"),
            enrolledAt: try row.optionalDate("enrolled_at"))
    }
}
