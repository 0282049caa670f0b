public import CountersignCore
public import Foundation

/// What the operator's console keeps and reads: operators, their
/// sessions, the audit log, and what it watches (fraud protections, who
/// requesters ask for most). Part of every ``CountersignStore``.
public protocol CountersignConsoleStore: Sendable {
    /// Adds an operator and writes `record` to the audit log in the same
    /// transaction: `alreadyExists` (and nothing written) for a name that
    /// is an operator already.
    func addOperator(_ added: Operator, audit record: AuditRecord) async throws
    /// Removes an operator, ends their console sessions and writes
    /// `record`: `notFound` (and nothing written) for a name that is no
    /// operator.
    func removeOperator(named name: String, audit record: AuditRecord) async throws
    /// The operators, by name.
    func operators() async throws -> [Operator]
    /// Writes one line to the audit log; returns it with its id.
    @discardableResult
    func appendAudit(_ record: AuditRecord) async throws -> AuditRecord
    /// Up to `limit` lines of the audit log after the one with id `after`
    /// (from the first if nil), oldest first; never garbage-collected.
    func auditRecords(after: Int64?, limit: Int) async throws -> [AuditRecord]
    /// Up to `limit` lines that `query` matches before the one with id
    /// `before` (from the newest if nil), newest first: the console's pages.
    func auditRecords(_ query: AuditQuery, before: Int64?, limit: Int) async throws -> [AuditRecord]

    /// The fraud protections running at `now`, the latest-ending first.
    func activeProtections(now: Date, limit: Int) async throws -> [ActiveProtection]
    /// Ends a user's fraud protection at once, with `record` in the same
    /// transaction: false, and nothing written, when none was running.
    func endProtection(issuer: String, clientUserID: String, now: Date, audit record: AuditRecord) async throws
        -> Bool
    /// Requesters' events per user or per address counted since `since`
    /// (to the minute), the most first: who is being prompted, from where.
    func requestCounts(scope: RequestCount.Scope, since: Date, limit: Int) async throws -> [RequestCount]

    /// Up to `limit` users with a device (removed ones too) whose id
    /// starts with `prefix` (byte for byte) and sorts after `after`, in
    /// byte order of their ids: the console's user list.
    func users(prefix: String, after: String?, limit: Int) async throws -> [UserSummary]
    /// Up to `limit` events that `query` matches at `now`, newest first
    /// (ties by id, in byte order), across every app (every API key the
    /// store holds, revoked ones too).
    func searchEvents(_ query: EventQuery, now: Date, limit: Int) async throws -> [ApprovalEvent]

    /// The events made since `since`, counted by app, channel, state at
    /// `now`, reason and method: the dashboard's figures.
    func eventTallies(since: Date, now: Date) async throws -> [EventTally]

    /// Starts a console session and writes `record` (its sign-in) in the
    /// same transaction, if `session.operatorName` is an operator: else
    /// `notFound`, and nothing written. `alreadyExists` when the event
    /// started a session already: an approval signs in once.
    func startConsoleSession(_ session: ConsoleSession, audit record: AuditRecord) async throws
    /// The session whose cookie secret has this digest, ended or not.
    func consoleSession(digest: Data) async throws -> ConsoleSession?
    /// Ends a session and writes `record` (its sign-out): false, and
    /// nothing written, when it is unknown or ended already.
    func endConsoleSession(digest: Data, now: Date, audit record: AuditRecord) async throws -> Bool
}

extension CountersignConsoleStore {
    /// Every line, `limit` a page, newest first.
    public func auditRecords(before: Int64?, limit: Int) async throws -> [AuditRecord] {
        try await auditRecords(AuditQuery(), before: before, limit: limit)
    }
}
