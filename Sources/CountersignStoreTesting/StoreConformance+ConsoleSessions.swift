import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let consoleSessionCases: [Case] = [
        Case(name: "console sessions: one per approved login, for an operator only, each sign-in audited") { store in
            let t0 = Fixture.t0
            try await ConsoleFixture.addOperator("alice", to: store)
            let session = ConsoleFixture.session(operator: "alice")
            try await store.startConsoleSession(session, audit: ConsoleFixture.signedIn(session))
            try check(try await store.consoleSession(digest: session.digest) == session, "read back as started")
            try check(
                try await store.consoleSession(digest: SecretToken.digest(SecretToken.generate())) == nil,
                "an unknown digest has no session")

            let stranger = ConsoleFixture.session(operator: "mallory")
            try await checkThrows(.notFound, "a sign-in of no operator") {
                try await store.startConsoleSession(stranger, audit: ConsoleFixture.signedIn(stranger))
            }
            try check(try await store.consoleSession(digest: stranger.digest) == nil, "no session for a stranger")

            var again = ConsoleFixture.session(operator: "alice", at: t0 + 5)
            again.eventID = session.eventID
            try await checkThrows(.alreadyExists, "a second sign-in with the same approval") {
                try await store.startConsoleSession(again, audit: ConsoleFixture.signedIn(again))
            }
            try check(try await store.consoleSession(digest: again.digest) == nil, "no second session")

            let log = try await store.auditRecords(after: nil, limit: 10)
            try check(log.map(\.action) == [.operatorAdded, .signedIn], "refusals wrote nothing: \(log.map(\.action))")
            try check(
                log.last?.actor == "alice" && log.last?.target == session.eventID && log.last?.ip == session.ip,
                "the sign-in's line")
        },
        Case(name: "console sessions: ended once, with its sign-out in the audit log") { store in
            let t0 = Fixture.t0
            try await ConsoleFixture.addOperator("alice", to: store)
            let session = ConsoleFixture.session(operator: "alice")
            try await store.startConsoleSession(session, audit: ConsoleFixture.signedIn(session))
            let signedOut = AuditRecord(at: t0 + 60, actor: "alice", action: .signedOut, ip: session.ip)
            try check(
                try await store.endConsoleSession(digest: session.digest, now: t0 + 60, audit: signedOut),
                "ended")
            var ended = session
            ended.endedAt = t0 + 60
            try check(try await store.consoleSession(digest: session.digest) == ended, "ended at the time given")
            try check(
                !(try await store.endConsoleSession(digest: session.digest, now: t0 + 90, audit: signedOut)),
                "not ended twice")
            try check(
                try await store.consoleSession(digest: session.digest)?.endedAt == t0 + 60, "the first end kept")
            try check(
                !(try await store.endConsoleSession(
                    digest: SecretToken.digest(SecretToken.generate()), now: t0 + 90, audit: signedOut)),
                "an unknown session is not ended")
            let log = try await store.auditRecords(after: nil, limit: 10)
            try check(
                log.map(\.action) == [.operatorAdded, .signedIn, .signedOut],
                "one sign-out line: \(log.map(\.action))")
            try check(log.last?.at == t0 + 60 && log.last?.actor == "alice", "the sign-out's line")
        },
        Case(name: "console sessions: removing an operator ends their open sessions, no one else's") { store in
            let t0 = Fixture.t0
            try await ConsoleFixture.addOperator("alice", to: store)
            try await ConsoleFixture.addOperator("bob", to: store)
            let open = ConsoleFixture.session(operator: "alice")
            let signedOut = ConsoleFixture.session(operator: "alice", at: t0 + 1)
            let bobs = ConsoleFixture.session(operator: "bob", at: t0 + 2)
            for session in [open, signedOut, bobs] {
                try await store.startConsoleSession(session, audit: ConsoleFixture.signedIn(session))
            }
            _ = try await store.endConsoleSession(
                digest: signedOut.digest, now: t0 + 10,
                audit: AuditRecord(at: t0 + 10, actor: "alice", action: .signedOut))
            try await store.removeOperator(
                named: "alice",
                audit: AuditRecord(at: t0 + 20, actor: "bob", action: .operatorRemoved, target: "alice"))
            try check(try await store.consoleSession(digest: open.digest)?.endedAt == t0 + 20, "ended at the removal")
            try check(
                try await store.consoleSession(digest: signedOut.digest)?.endedAt == t0 + 10, "an earlier end kept")
            try check(try await store.consoleSession(digest: bobs.digest)?.endedAt == nil, "bob's untouched")
            try await checkThrows(.notFound, "a sign-in of a removed operator") {
                let late = ConsoleFixture.session(operator: "alice", at: t0 + 30)
                try await store.startConsoleSession(late, audit: ConsoleFixture.signedIn(late))
            }
            let log = try await store.auditRecords(after: nil, limit: 20)
            try check(log.last?.action == .operatorRemoved, "the removal's line is the last")
            try check(log.filter { $0.action == .signedOut }.count == 1, "a removal writes no sign-outs")
        },
        Case(name: "audit log: paged newest first, before an id") { store in
            var ids: [Int64] = []
            for index in 0..<5 {
                let record = try await store.appendAudit(
                    AuditRecord(
                        at: Fixture.t0 + Double(index), actor: "alice", action: .signedIn, target: "ev_\(index)"))
                ids.append(record.id ?? 0)
            }
            let newest = try await store.auditRecords(before: nil, limit: 2)
            try check(newest.map(\.id) == [ids[4], ids[3]], "the newest page: \(newest.map(\.id))")
            try check(newest.first?.target == "ev_4" && newest.first?.at == Fixture.t0 + 4, "every field kept")
            let next = try await store.auditRecords(before: newest.last?.id, limit: 2)
            try check(next.map(\.id) == [ids[2], ids[1]], "the next page, without its boundary: \(next.map(\.id))")
            let last = try await store.auditRecords(before: next.last?.id, limit: 2)
            try check(last.map(\.id) == [ids[0]], "the oldest, alone: \(last.map(\.id))")
            try check(try await store.auditRecords(before: ids[0], limit: 2).isEmpty, "nothing before the first")
            try check(
                try await store.auditRecords(before: nil, limit: 10).map(\.id) == ids.reversed().map { Optional($0) },
                "all, newest first")
            try check(
                try await store.auditRecords(before: ids[4] + 1000, limit: 1).map(\.id) == [ids[4]],
                "an id past the newest starts from the newest")
        },
        Case(name: "audit log: filtered by actor, action, target and time, each alone and together, paged") {
            store in
            let t0 = Fixture.t0
            let lines: [(String, AuditRecord.Action, String?)] = [
                ("host", .operatorAdded, "alice"), ("alice", .signedIn, "ev_1"), ("alice", .deviceRemoved, "dev_1"),
                ("bob", .deviceRemoved, "dev_2"), ("alice", .apiKeyCreated, "ck_1"), ("alice", .signedOut, "ev_1"),
            ]
            var ids: [Int64] = []
            for (index, (actor, action, target)) in lines.enumerated() {
                let record = try await store.appendAudit(
                    AuditRecord(at: t0 + Double(index), actor: actor, action: action, target: target))
                ids.append(record.id ?? 0)
            }
            func found(_ query: AuditQuery, before: Int64? = nil, limit: Int = 10) async throws -> [Int64?] {
                try await store.auditRecords(query, before: before, limit: limit).map(\.id)
            }
            try check(try await found(AuditQuery(actor: "bob")) == [ids[3]], "by actor")
            try check(try await found(AuditQuery(action: .deviceRemoved)) == [ids[3], ids[2]], "by action")
            try check(try await found(AuditQuery(target: "ev_1")) == [ids[5], ids[1]], "by target")
            try check(try await found(AuditQuery(from: t0 + 1, to: t0 + 3)) == [ids[2], ids[1]], "by time")
            try check(
                try await found(AuditQuery(actor: "alice", action: .deviceRemoved, target: "dev_1")) == [ids[2]],
                "together")
            try check(
                try await found(AuditQuery(actor: "alice"), before: ids[4], limit: 1) == [ids[2]],
                "paged: the next match before an id")
            try check(try await found(AuditQuery(actor: "carol")).isEmpty, "nobody")
        },
        Case(name: "console sessions: collected long after expiry, the audit log never") { store in
            let t0 = Fixture.t0
            try await ConsoleFixture.addOperator("alice", to: store)
            let old = ConsoleFixture.session(operator: "alice")
            var oldEnded = ConsoleFixture.session(operator: "alice", at: t0 + 1)
            oldEnded.endedAt = t0 + 2
            let recent = ConsoleFixture.session(operator: "alice", at: t0 + 86400)
            let live = ConsoleFixture.session(operator: "alice", at: t0 + 5 * 86400)
            for session in [old, oldEnded, recent, live] {
                try await store.startConsoleSession(session, audit: ConsoleFixture.signedIn(session))
            }
            let removed = try await store.garbageCollect(
                now: t0 + 5 * 86400 + 60, eventsEndedBefore: recent.expiresAt)
            try check(removed == 2, "two sessions collected, \(removed) rows went")
            try check(try await store.consoleSession(digest: old.digest) == nil, "an old session goes")
            try check(try await store.consoleSession(digest: oldEnded.digest) == nil, "an old ended one too")
            try check(
                try await store.consoleSession(digest: recent.digest) == recent, "one expiring at the cutoff stays")
            try check(try await store.consoleSession(digest: live.digest) == live, "a live one stays")
            // A cutoff past `now` is `now`: a session still running is never
            // collected, whatever the caller asks.
            try await store.garbageCollect(now: t0 + 5 * 86400 + 60, eventsEndedBefore: t0 + 400 * 86400)
            try check(try await store.consoleSession(digest: recent.digest) == nil, "expired before now, it goes")
            try check(try await store.consoleSession(digest: live.digest) == live, "a running one stays")
            try await store.garbageCollect(now: t0 + 400 * 86400, eventsEndedBefore: t0 + 400 * 86400)
            try check(try await store.consoleSession(digest: live.digest) == nil, "all go in the end")
            try check(
                try await store.auditRecords(after: nil, limit: 10).count == 5, "every sign-in stays in the audit log")
        },
    ]
}

/// Test data for the console's sessions.
private enum ConsoleFixture {
    static func addOperator(_ name: String, to store: any CountersignStore) async throws {
        try await store.addOperator(
            Operator(name: name, addedAt: Fixture.t0 - 60),
            audit: AuditRecord(at: Fixture.t0 - 60, actor: AuditRecord.host, action: .operatorAdded, target: name))
    }

    /// A session started at `at` by a fresh approved login, for the rule's lifetime.
    static func session(operator name: String, at: Date = Fixture.t0) -> ConsoleSession {
        ConsoleSession(
            digest: SecretToken.digest(SecretToken.generate()), operatorName: name, eventID: ApprovalEvent.newID(),
            ip: "192.0.2.7", createdAt: at, expiresAt: at + ConsoleSessionRule.lifetime)
    }

    static func signedIn(_ session: ConsoleSession) -> AuditRecord {
        AuditRecord(
            at: session.createdAt, actor: session.operatorName, action: .signedIn, target: session.eventID,
            ip: session.ip)
    }
}
