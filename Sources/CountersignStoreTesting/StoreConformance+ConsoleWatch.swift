import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let consoleWatchCases: [Case] = [
        Case(name: "console watch: running protections, the latest-ending first, then by app and user, at most limit") {
            store in
            let t0 = Fixture.t0
            try await WatchFixture.protect("alice", until: t0 + 900, in: store)
            try await WatchFixture.protect("bob", until: t0 + 1800, in: store)
            try await WatchFixture.protect("carol", until: t0 + 900, in: store)
            try await WatchFixture.protect("dave", issuer: "ck_other", until: t0 + 900, in: store)
            try await WatchFixture.protect("erin", until: t0 + 100, in: store)
            try await WatchFixture.protect("frank", until: t0 + 50, in: store)
            let running = try await store.activeProtections(now: t0 + 100, limit: 10)
            try check(
                running == [
                    ActiveProtection(issuer: "ck_app", clientUserID: "bob", until: t0 + 1800),
                    ActiveProtection(issuer: "ck_app", clientUserID: "alice", until: t0 + 900),
                    ActiveProtection(issuer: "ck_app", clientUserID: "carol", until: t0 + 900),
                    ActiveProtection(issuer: "ck_other", clientUserID: "dave", until: t0 + 900),
                ], "running at t0+100, none ending then or before: \(running)")
            try check(
                try await store.activeProtections(now: t0 + 100, limit: 2).map(\.clientUserID) == ["bob", "alice"],
                "at most limit")
            try check(
                try await store.activeProtections(now: t0 + 99, limit: 10).map(\.clientUserID)
                    == ["bob", "alice", "carol", "dave", "erin"], "one ending later runs a second before")
            try check(
                try await store.activeProtections(now: t0 + 1000, limit: 10).map(\.clientUserID) == ["bob"],
                "only the longest still runs later")
            try check(
                try await store.activeProtections(now: t0 + 1800, limit: 10).isEmpty, "none once all have ended")
        },
        Case(name: "console watch: ending a protection lets requesters in again, with its line in the audit log") {
            store in
            let t0 = Fixture.t0
            try await WatchFixture.protect("alice", until: t0 + 900, in: store)
            try await WatchFixture.protect("bob", until: t0 + 900, in: store)
            try await WatchFixture.protect("carol", until: t0 + 50, in: store)
            let limits = PendingLimits(perUser: 5)
            try await checkThrows(.userProtected(retryAfter: 890), "a requester's event while protected") {
                try await store.insertPendingEvent(
                    Fixture.event(at: t0 + 10), by: .requester(address: "203.0.113.9"), limits: limits,
                    announcing: [], now: t0 + 10)
            }
            let ended = WatchFixture.ended("alice", at: t0 + 20)
            try check(
                try await store.endProtection(issuer: "ck_app", clientUserID: "alice", now: t0 + 20, audit: ended),
                "alice's protection was running")
            try check(
                try await store.activeProtections(now: t0 + 20, limit: 10).map(\.clientUserID) == ["bob", "carol"],
                "alice's is gone, the others stay")
            try await store.insertPendingEvent(
                Fixture.event(at: t0 + 30), by: .requester(address: "203.0.113.9"), limits: limits, announcing: [],
                now: t0 + 30)
            try await checkThrows(.userProtected(retryAfter: 870), "bob is still protected") {
                try await store.insertPendingEvent(
                    Fixture.event(user: "bob", at: t0 + 30), by: .requester(address: "203.0.113.9"),
                    limits: limits, announcing: [], now: t0 + 30)
            }
            let log = try await store.auditRecords(after: nil, limit: 10)
            try check(log.count == 1, "one line: \(log.map(\.action))")
            try check(
                log.first?.action == .fraudProtectionEnded && log.first?.at == t0 + 20 && log.first?.actor == "op"
                    && log.first?.target == ended.target && log.first?.ip == ended.ip && log.first?.id != nil,
                "the line as given: \(String(describing: log.first))")

            try check(
                !(try await store.endProtection(
                    issuer: "ck_app", clientUserID: "alice", now: t0 + 40,
                    audit: WatchFixture.ended("alice", at: t0 + 40)
                )), "not ended twice")
            try check(
                !(try await store.endProtection(
                    issuer: "ck_app", clientUserID: "dave", now: t0 + 40, audit: WatchFixture.ended("dave", at: t0 + 40)
                )), "a user never protected")
            try check(
                !(try await store.endProtection(
                    issuer: "ck_other", clientUserID: "bob", now: t0 + 40,
                    audit: WatchFixture.ended("bob", at: t0 + 40))), "bob of another app")
            try check(
                !(try await store.endProtection(
                    issuer: "ck_app", clientUserID: "carol", now: t0 + 50,
                    audit: WatchFixture.ended("carol", at: t0 + 50))), "a protection that ran out")
            try check(
                try await store.auditRecords(after: nil, limit: 10).count == 1, "nothing written when none ran")
            try check(
                try await store.activeProtections(now: t0 + 40, limit: 10).map(\.clientUserID) == ["bob", "carol"],
                "the others untouched")
        },
        Case(name: "console watch: requesters' events per user and per address since a minute, the most first") {
            store in
            let t0 = Fixture.t0  // the first second of a minute
            let (a, b, c) = ("198.51.100.1", "198.51.100.2", "192.0.2.9")
            let asked: [(String, String, String, TimeInterval)] = [
                ("ck_app", "alice", a, 0), ("ck_app", "bob", a, 0),
                ("ck_app", "alice", a, 60), ("ck_app", "alice", b, 61), ("ck_app", "bob", b, 119),
                ("ck_other", "carol", b, 120), ("ck_app", "dave", c, 121), ("ck_app", "alice", c, 130),
            ]
            let limits = PendingLimits(
                perUser: 100, perUserFromRequesters: 100, perAddress: 100, requestsPerUser: 100,
                requestsPerAddress: 100)
            for (issuer, user, address, offset) in asked {
                var event = Fixture.event(issuer: issuer, user: user, at: t0 + offset)
                event.ip = address
                try await store.insertPendingEvent(
                    event, by: .requester(address: address), limits: limits, announcing: [], now: t0 + offset)
            }
            // The backend's events are not counted.
            try await store.insertPendingEvent(
                Fixture.event(at: t0 + 60), by: .backend, limits: limits, announcing: [], now: t0 + 60)

            func users(since offset: TimeInterval, limit: Int = 10) async throws -> [String] {
                try await store.requestCounts(scope: .user, since: t0 + offset, limit: limit).map {
                    "\($0.scope.rawValue) \($0.issuer ?? "-") \($0.key) \($0.count)"
                }
            }
            func addresses(since offset: TimeInterval, limit: Int = 10) async throws -> [String] {
                try await store.requestCounts(scope: .address, since: t0 + offset, limit: limit).map {
                    "\($0.scope.rawValue) \($0.issuer ?? "-") \($0.key) \($0.count)"
                }
            }
            let allUsers = try await users(since: 0)
            try check(
                allUsers == [
                    "user ck_app alice 4", "user ck_app bob 2", "user ck_app dave 1", "user ck_other carol 1",
                ], "per user, ties by app then user: \(allUsers)")
            let allAddresses = try await addresses(since: 0)
            try check(
                allAddresses == ["address - \(a) 3", "address - \(b) 3", "address - \(c) 2"],
                "per address, the most first, ties by address: \(allAddresses)")
            try check(
                try await store.requestCounts(scope: .user, since: t0, limit: 1)
                    == [RequestCount(scope: .user, issuer: "ck_app", key: "alice", count: 4)],
                "a user's count as a value")

            // Counted to the minute: a time within a minute counts all of it.
            let fromSecond = try await users(since: 90)
            try check(
                fromSecond == [
                    "user ck_app alice 3", "user ck_app bob 1", "user ck_app dave 1", "user ck_other carol 1",
                ], "users from the second minute: \(fromSecond)")
            try check(try await users(since: 61) == fromSecond, "the same from any second of that minute")
            let addressesFromSecond = try await addresses(since: 90)
            try check(
                addressesFromSecond == ["address - \(b) 3", "address - \(c) 2", "address - \(a) 1"],
                "addresses from the second minute: \(addressesFromSecond)")
            let fromThird = try await users(since: 120)
            try check(
                fromThird == ["user ck_app alice 1", "user ck_app dave 1", "user ck_other carol 1"],
                "users from the third minute, on its first second: \(fromThird)")
            let addressesFromThird = try await addresses(since: 120)
            try check(
                addressesFromThird == ["address - \(c) 2", "address - \(b) 1"],
                "addresses from the third minute: \(addressesFromThird)")
            try check(try await users(since: 180).isEmpty, "no user after the last minute")
            try check(try await addresses(since: 180).isEmpty, "no address after the last minute")

            try check(
                try await users(since: 0, limit: 2) == ["user ck_app alice 4", "user ck_app bob 2"], "at most limit")
            try check(try await addresses(since: 90, limit: 1) == ["address - \(b) 3"], "at most limit")
        },
    ]
}

/// Test data for what the console watches.
private enum WatchFixture {
    /// Protects `user` until `until`, as a fraud report at `Fixture.t0` does.
    static func protect(
        _ user: String, issuer: String = "ck_app", until: Date, in store: any CountersignStore
    ) async throws {
        let device = try await Fixture.enrolled(in: store, issuer: issuer, user: user)
        let event = Fixture.event(issuer: issuer, user: user)
        try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
        let report = try await store.reportFraud(
            id: event.id, decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws"),
            protectUntil: until, now: Fixture.t0)
        try check(report.protectedUntil == until, "\(user) protected until \(until)")
    }

    static func ended(_ user: String, at: Date) -> AuditRecord {
        AuditRecord(at: at, actor: "op", action: .fraudProtectionEnded, target: "ck_app " + user, ip: "192.0.2.7")
    }
}
