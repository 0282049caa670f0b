public import CountersignCore
import CountersignStore
import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    public func directoryPeople() async throws -> [DirectoryPerson] {
        let logger = logger
        return try await read { db in
            try await db.rows(
                "SELECT * FROM directory_people ORDER BY client_user_id COLLATE \"C\"", logger: logger
            ).map(Self.person(row:))
        }
    }

    public func directoryPerson(clientUserID: String) async throws -> DirectoryPerson? {
        if clientUserID.utf8.contains(0) { return nil }
        let logger = logger
        return try await read { db in
            try await db.row(
                "SELECT * FROM directory_people WHERE client_user_id = \(clientUserID)", logger: logger
            ).map(Self.person(row:))
        }
    }

    public func directoryPeople(prefix: String, after: String?, limit: Int) async throws -> [DirectoryPerson] {
        if UserSummary.findsNobody(prefix: prefix) { return [] }
        let after = UserSummary.position(after: after)
        let upper = UserSummary.upperBound(ofPrefix: prefix)
        let logger = logger
        return try await read { db in
            try await db.rows(
                """
                SELECT * FROM directory_people
                WHERE client_user_id COLLATE "C" >= \(prefix) AND client_user_id COLLATE "C" < \(upper)
                    AND client_user_id COLLATE "C" > \(after ?? "")
                ORDER BY client_user_id COLLATE "C" LIMIT \(limit)
                """, logger: logger
            ).map(Self.person(row:))
        }
    }

    public func updateDirectoryPerson(
        clientUserID: String, _ change: @escaping @Sendable (DirectoryUserState) throws -> DirectoryUserChange
    ) async throws -> DirectoryUserChange {
        let logger = logger
        return try await update { db in
            // Their devices locked first, as a decision's settling write
            // takes the deciding device FOR SHARE: a decision either settles
            // before the suspension or finds the device suspended.
            let devices = try await db.rows(
                """
                SELECT * FROM devices WHERE client_user_id COLLATE "C" = \(clientUserID) ORDER BY created_at, id
                FOR UPDATE
                """,
                logger: logger
            ).map(Self.device(row:))
            let person = try await db.row(
                "SELECT * FROM directory_people WHERE client_user_id = \(clientUserID) FOR UPDATE", logger: logger
            ).map(Self.person(row:))
            let after = try Self.applying { try change(DirectoryUserState(person: person, devices: devices)) }
            let written = after.person
            _ = try await db.run(
                """
                INSERT INTO directory_people (client_user_id, dn, name, email, groups, state, changed_at)
                VALUES (\(clientUserID), \(written.dn), \(written.name), \(written.email), \(written.groups),
                    \(written.state.rawValue), \(written.changedAt.seconds))
                ON CONFLICT (client_user_id) DO UPDATE SET dn = excluded.dn, name = excluded.name,
                    email = excluded.email, groups = excluded.groups, state = excluded.state,
                    changed_at = excluded.changed_at
                """, logger: logger)
            if !after.devices.isEmpty {
                _ = try await db.run(
                    """
                    UPDATE devices SET suspended_at = \(after.suspendedAt?.seconds)
                    WHERE id = ANY(\(after.devices)) AND client_user_id = \(clientUserID) AND revoked_at IS NULL
                    """, logger: logger)
            }
            for line in after.changes { try await Self.record(line, into: db, logger: logger) }
            if let record = after.audit { _ = try await Self.insert(record, in: db, logger: logger) }
            return after
        }
    }

    static func person(row: PostgresRandomAccessRow) throws -> DirectoryPerson {
        guard let state = DirectoryPerson.State(rawValue: try row.value("state")) else {
            throw StoreError(.backend, "unreadable directory state")
        }
        return DirectoryPerson(
            clientUserID: try row.value("client_user_id"), dn: try row.value("dn"), name: try row.value("name"),
            email: try row.value("email"), groups: try row.value("groups"), state: state,
            changedAt: try row.date("changed_at"))
    }
}
