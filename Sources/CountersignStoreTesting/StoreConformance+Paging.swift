import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let pagingCases: [Case] = [
        Case(name: "paging: decision records before a time, strictly, newest first, of that user and app only") {
            store in
            let times = [1, 2, 2.25, 3, 4.5].map { Fixture.t0 + $0 }
            var alices: [String] = []
            for (index, time) in times.enumerated() {
                let event = Fixture.decided(index.isMultiple(of: 2) ? .approved : .rejected, at: time)
                try await store.insertEvent(event)
                alices.append(event.id)
            }
            // The same times for someone else: another user, the same user of another app.
            for time in times {
                try await store.insertEvent(Fixture.decided(.approved, user: "bob", at: time))
                try await store.insertEvent(Fixture.decided(.rejected, issuer: "ck_other", at: time))
            }
            // A pending event records no decision.
            try await store.insertEvent(Fixture.event(at: Fixture.t0))
            let newest = Array(alices.reversed())
            func before(_ time: Date, limit: Int = 10, user: String = "alice", issuer: String = "ck_app")
                async throws -> [DecisionRecord]
            {
                try await store.decisionRecords(issuer: issuer, clientUserID: user, before: time, limit: limit)
            }
            let all = try await before(Fixture.t0 + 1000)
            try check(all.map(\.eventID) == newest, "all of alice's, newest first: \(all.map(\.eventID))")
            try check(
                all.map(\.decidedAt) == times.reversed()
                    && all.allSatisfy { $0.issuer == "ck_app" && $0.clientUserID == "alice" },
                "each as decided")
            try check(
                try await before(times[3]).map(\.eventID) == Array(newest[2...]),
                "strictly before: not the one decided at that very time")
            try check(
                try await before(times[2]).map(\.eventID) == Array(newest[3...]), "strictly before a fraction")
            try check(
                try await before(times[2] + 0.001).map(\.eventID) == Array(newest[2...]),
                "just after one: it is included")
            try check(try await before(times[0]).isEmpty, "nothing before the first")
            try check(try await before(Fixture.t0 + 1000, limit: 2).map(\.eventID) == Array(newest[..<2]), "limit")
            try check(try await before(times[3], limit: 1).map(\.eventID) == [newest[2]], "limit after the time")
            let bobs = try await before(Fixture.t0 + 1000, user: "bob")
            try check(bobs.count == 5 && bobs.allSatisfy { $0.clientUserID == "bob" }, "another user's are his own")
            let others = try await before(Fixture.t0 + 1000, issuer: "ck_other")
            try check(others.count == 5 && others.allSatisfy { $0.issuer == "ck_other" }, "another app's are its own")
            try check(try await before(Fixture.t0 + 1000, user: "carol").isEmpty, "a user with none")
        },
        Case(name: "paging: events created before a time, strictly, newest first, any status, of that user only") {
            store in
            let times = [-120, -30, -7.5, -7, 0].map { Fixture.t0 + $0 }
            // Whatever their status at any time: expired, approved, rejected, pending, withdrawn.
            let expired = Fixture.event(at: times[0])
            let approved = Fixture.decided(.approved, at: times[1], createdAt: times[1])
            let rejected = Fixture.decided(.rejected, at: times[2], createdAt: times[2])
            let pending = Fixture.event(at: times[3], window: 3600)
            let withdrawn = Fixture.event(at: times[4], window: 3600)
            for event in [expired, approved, rejected] { try await store.insertEvent(event) }
            for event in [pending, withdrawn] {
                try await store.insertPendingEvent(event, maxPending: 10, now: event.createdAt)
            }
            _ = try await store.withdrawEvent(id: withdrawn.id, now: Fixture.t0 + 1)
            for time in times {
                try await store.insertEvent(Fixture.event(user: "bob", at: time))
                try await store.insertEvent(Fixture.event(issuer: "ck_other", at: time))
            }
            let newest = [withdrawn, pending, rejected, approved, expired].map(\.id)
            func before(_ time: Date, limit: Int = 10, user: String = "alice", issuer: String = "ck_app")
                async throws -> [ApprovalEvent]
            {
                try await store.events(issuer: issuer, clientUserID: user, before: time, limit: limit)
            }
            let all = try await before(Fixture.t0 + 1000)
            try check(all.map(\.id) == newest, "all of alice's, newest first: \(all.map(\.id))")
            try check(
                all.first == (try await store.event(id: withdrawn.id)) && all.last == expired,
                "each as it stands")
            try check(
                try await before(times[4]).map(\.id) == Array(newest[1...]),
                "strictly before: not the one created at that very time")
            try check(try await before(times[2]).map(\.id) == Array(newest[3...]), "strictly before a fraction")
            try check(try await before(times[0]).isEmpty, "nothing before the first")
            try check(try await before(Fixture.t0 + 1000, limit: 2).map(\.id) == Array(newest[..<2]), "limit")
            try check(try await before(times[3], limit: 2).map(\.id) == Array(newest[2..<4]), "limit after the time")
            let bobs = try await before(Fixture.t0 + 1000, user: "bob")
            try check(bobs.count == 5 && bobs.allSatisfy { $0.clientUserID == "bob" }, "another user's are his own")
            let others = try await before(Fixture.t0 + 1000, issuer: "ck_other")
            try check(others.count == 5 && others.allSatisfy { $0.issuer == "ck_other" }, "another app's are its own")
            try check(try await before(Fixture.t0 + 1000, user: "carol").isEmpty, "a user with none")
        },
        Case(name: "paging: before the last one's time, pages go through a user's records and events once each") {
            store in
            // Distinct times, inserted out of order, some a fraction apart.
            let offsets: [TimeInterval] = [5, 1, 7.25, 3, 0.5, 6, 2, 7.5, 4, 0.75, 9, 8]
            var decisions: [(id: String, time: Date)] = []
            var events: [(id: String, time: Date)] = []
            for (index, offset) in offsets.enumerated() {
                let event = Fixture.decided(
                    index.isMultiple(of: 3) ? .rejected : .approved, at: Fixture.t0 + offset + 100,
                    createdAt: Fixture.t0 + offset)
                try await store.insertEvent(event)
                decisions.append((event.id, Fixture.t0 + offset + 100))
                events.append((event.id, Fixture.t0 + offset))
                try await store.insertEvent(Fixture.decided(.approved, user: "bob", at: Fixture.t0 + offset + 100))
                try await store.insertEvent(Fixture.decided(.approved, issuer: "ck_other", at: Fixture.t0 + offset))
            }
            let newestDecisions = decisions.sorted { $0.time > $1.time }.map(\.id)
            let newestEvents = events.sorted { $0.time > $1.time }.map(\.id)
            for size in [1, 3, 5, 12, 20] {
                var paged: [String] = []
                var page = try await store.decisionRecords(issuer: "ck_app", clientUserID: "alice", limit: size)
                while let last = page.last {
                    try check(page.count <= size, "at most \(size) a page")
                    paged += page.map(\.eventID)
                    page = try await store.decisionRecords(
                        issuer: "ck_app", clientUserID: "alice", before: last.decidedAt, limit: size)
                    try check(paged.count <= offsets.count, "paging ends")
                }
                try check(paged == newestDecisions, "each decision once, newest first, pages of \(size): \(paged)")
            }
            for size in [1, 3, 5, 12, 20] {
                var paged: [String] = []
                var page = try await store.events(
                    issuer: "ck_app", clientUserID: "alice", status: nil, now: Fixture.t0, limit: size)
                while let last = page.last {
                    try check(page.count <= size, "at most \(size) a page")
                    paged += page.map(\.id)
                    page = try await store.events(
                        issuer: "ck_app", clientUserID: "alice", before: last.createdAt, limit: size)
                    try check(paged.count <= offsets.count, "paging ends")
                }
                try check(paged == newestEvents, "each event once, newest first, pages of \(size): \(paged)")
            }
        },
        Case(name: "paging: records of the same time come by id, descending, with or without a time") { store in
            let time = Fixture.t0 + 10
            var ids: [String] = []
            for index in 0..<6 {
                let event = Fixture.decided(index.isMultiple(of: 2) ? .approved : .rejected, at: time, createdAt: time)
                try await store.insertEvent(event)
                ids.append(event.id)
            }
            let older = Fixture.decided(.approved, at: time - 1, createdAt: time - 1)
            try await store.insertEvent(older)
            let expected = ids.sorted(by: >) + [older.id]
            try check(
                try await store.decisionRecords(issuer: "ck_app", clientUserID: "alice", limit: 10).map(\.eventID)
                    == expected, "decision records")
            try check(
                try await store.decisionRecords(issuer: "ck_app", clientUserID: "alice", before: time + 1, limit: 10)
                    .map(\.eventID) == expected, "decision records before a time")
            try check(
                try await store.events(issuer: "ck_app", clientUserID: "alice", status: nil, now: time, limit: 10)
                    .map(\.id) == expected, "events")
            try check(
                try await store.events(issuer: "ck_app", clientUserID: "alice", before: time + 1, limit: 10).map(\.id)
                    == expected, "events before a time")
            try check(
                try await store.events(issuer: "ck_app", clientUserID: "alice", before: time + 1, limit: 2).map(\.id)
                    == Array(expected[..<2]), "the limit cuts in id order")
        },
    ]
}

extension Fixture {
    /// An event of `user` settled as `status` at `decidedAt`, as
    /// ``CountersignStore/insertEvent(_:)`` stores it with its decision
    /// record; created at `createdAt` (else a minute earlier).
    fileprivate static func decided(
        _ status: EventStatus, issuer: String = "ck_app", user: String = "alice", at decidedAt: Date,
        createdAt: Date? = nil
    ) -> ApprovalEvent {
        var event = event(issuer: issuer, user: user, at: createdAt ?? decidedAt - 60)
        event.storedStatus = status
        event.updatedAt = decidedAt
        event.decidedAt = decidedAt
        event.decision = "jws-\(status.rawValue)"
        return event
    }
}
