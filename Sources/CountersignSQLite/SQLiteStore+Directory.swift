public import CountersignCore
import CountersignStore
import Foundation
import GRDB

extension SQLiteStore {
    public func directoryPeople() async throws -> [DirectoryPerson] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM directory_people ORDER BY client_user_id").map(Self.person(row:))
        }
    }

    public func directoryPerson(clientUserID: String) async throws -> DirectoryPerson? {
        try read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM directory_people WHERE client_user_id = ?", arguments: [clientUserID]
            )
            .map(Self.person(row:))
        }
    }

    public func directoryPeople(prefix: String, after: String?, limit: Int) async throws -> [DirectoryPerson] {
        if UserSummary.findsNobody(prefix: prefix) { return [] }
        let after = UserSummary.position(after: after)
        return try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM directory_people
                    WHERE client_user_id >= ? AND client_user_id < ? AND client_user_id > ?
                    ORDER BY client_user_id LIMIT ?
                    """,
                arguments: [prefix, UserSummary.upperBound(ofPrefix: prefix), after ?? "", limit]
            ).map(Self.person(row:))
        }
    }

    public func updateDirectoryPerson(
        clientUserID: String, _ change: @escaping @Sendable (DirectoryUserState) throws -> DirectoryUserChange
    ) async throws -> DirectoryUserChange {
        try await write { db in
            let person = try Row.fetchOne(
                db, sql: "SELECT * FROM directory_people WHERE client_user_id = ?", arguments: [clientUserID]
            ).map(Self.person(row:))
            let devices = try Row.fetchAll(
                db, sql: "SELECT \(Self.deviceColumns) FROM devices WHERE client_user_id = ? ORDER BY created_at, id",
                arguments: [clientUserID]
            ).map(Self.device(row:))
            let after = try change(DirectoryUserState(person: person, devices: devices))
            let written = after.person
            try db.execute(
                sql: """
                    INSERT INTO directory_people (client_user_id, dn, name, email, groups, state, changed_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (client_user_id) DO UPDATE SET dn = excluded.dn, name = excluded.name,
                        email = excluded.email, groups = excluded.groups, state = excluded.state,
                        changed_at = excluded.changed_at
                    """,
                arguments: [
                    clientUserID, written.dn, written.name, written.email, try Self.jsonText(written.groups),
                    written.state.rawValue, written.changedAt.timeIntervalSince1970,
                ])
            for id in after.devices {
                try db.execute(
                    sql:
                        "UPDATE devices SET suspended_at = ? WHERE id = ? AND client_user_id = ? AND revoked_at IS NULL",
                    arguments: [after.suspendedAt?.timeIntervalSince1970, id, clientUserID])
            }
            for line in after.changes { try Self.record(line, into: db) }
            if let record = after.audit { try Self.insert(record, in: db) }
            return after
        }
    }

    static func person(row: Row) throws -> DirectoryPerson {
        guard let state = DirectoryPerson.State(rawValue: row["state"]) else {
            throw StoreError(.backend, "unreadable directory state")
        }
        return DirectoryPerson(
            clientUserID: row["client_user_id"], dn: row["dn"], name: row["name"], email: row["email"],
            groups: try JSONDecoder().decode([String].self, from: Data((row["groups"] as String).utf8)), state: state,
            changedAt: Date(timeIntervalSince1970: row["changed_at"]))
    }
}
