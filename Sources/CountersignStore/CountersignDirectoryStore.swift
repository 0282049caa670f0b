public import CountersignCore
import Foundation

/// The people the directory sync knows, kept in the store so that every
/// instance refuses a suspended person's devices at once. Part of every
/// ``CountersignStore``.
public protocol CountersignDirectoryStore: Sendable {
    /// Every person kept, by user id.
    func directoryPeople() async throws -> [DirectoryPerson]
    /// The person with this user id, or nil.
    func directoryPerson(clientUserID: String) async throws -> DirectoryPerson?
    /// People by the start of their user id in byte order, after `after`,
    /// at most `limit`: the console's user list.
    func directoryPeople(prefix: String, after: String?, limit: Int) async throws -> [DirectoryPerson]

    /// The updater of one person (a change decided by ``DirectorySync``
    /// above the store, written once for every store).
    ///
    /// In one write transaction, after every other change of this person
    /// (PostgreSQL locks their devices `FOR UPDATE`; SQLite has one
    /// writer): reads their record and their devices in every app, hands
    /// them to `change`, and writes what it returns: the record, the
    /// devices' `suspended_at`, the device log's lines with their webhooks.
    /// Whatever `change` throws leaves everything as it was; `change` runs
    /// once.
    func updateDirectoryPerson(
        clientUserID: String, _ change: @escaping @Sendable (DirectoryUserState) throws -> DirectoryUserChange
    ) async throws -> DirectoryUserChange
}
