import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let consoleSearchCases: [Case] = [
        Case(name: "console users: by prefix in byte order, paged, across apps, removed devices counted apart") {
            store in
            for user in ["alice", "alicia", "Alina", "bob", "al", "ali\u{e9}", "carol"] {
                _ = try await Fixture.enrolled(in: store, user: user)
            }
            let second = try await Fixture.enrolled(in: store, issuer: "ck_other", user: "alice")
            _ = try await Fixture.enrolled(in: store, issuer: "ck_other", user: "alice")
            _ = try await store.revokeDevice(
                id: second.id, issuer: "ck_other", clientUserID: "alice", author: Fixture.author, now: Fixture.t0 + 1)
            let al = try await store.users(prefix: "al", after: nil, limit: 10)
            try check(
                al.map(\.clientUserID) == ["al", "alice", "alicia", "ali\u{e9}"],
                "the prefix, case counting, in byte order: \(al.map(\.clientUserID))")
            guard let alice = al.first(where: { $0.clientUserID == "alice" }) else {
                throw ConformanceFailure(message: "alice is listed", location: "\(#fileID):\(#line)")
            }
            try check(
                alice.issuers == ["ck_app", "ck_other"] && alice.devices == 3 && alice.activeDevices == 2,
                "every app, removed devices apart: \(alice)")
            let first = try await store.users(prefix: "al", after: nil, limit: 2)
            let rest = try await store.users(prefix: "al", after: first.last?.clientUserID, limit: 2)
            try check(
                (first + rest).map(\.clientUserID) == al.map(\.clientUserID), "two pages, none twice: \(rest)")
            try check(
                try await store.users(prefix: "", after: "bob", limit: 10).map(\.clientUserID) == ["carol"],
                "no prefix: everyone after the cursor")
            let wildcards =
                try await store.users(prefix: "%", after: nil, limit: 10)
                + store.users(prefix: "_l", after: nil, limit: 10)
            try check(wildcards.isEmpty, "no wildcards")
        },
        Case(name: "console event search: each filter, the state at the time, newest first, paged by cursor") {
            store in
            let t0 = Fixture.t0
            for key in ["ck_app", "ck_other"] { try await Fixture.apiKey(key, in: store) }
            var events: [ApprovalEvent] = []
            for index in 0..<6 {
                var event = Fixture.event(
                    issuer: index < 4 ? "ck_app" : "ck_other", user: index.isMultiple(of: 2) ? "alice" : "bob",
                    at: t0 + Double(index / 2))  // two at each time: ties broken by id
                event.ip = index == 5 ? "203.0.113.9" : "192.0.2.1"
                if index == 3 { event.name = EventName.transaction }
                if index == 1 { event.channel = .radius }
                if index == 2 {
                    event.storedStatus = .approved
                    event.decidedAt = t0 + 10
                }
                try await store.insertEvent(event)
                events.append(event)
            }
            // Newest first; at the same time, the greater id (in bytes) first.
            let newest = events.sorted {
                $0.createdAt != $1.createdAt
                    ? $0.createdAt > $1.createdAt : Array($1.id.utf8).lexicographicallyPrecedes(Array($0.id.utf8))
            }.map(\.id)
            func search(_ query: EventQuery, now: Date = t0 + 30, limit: Int = 10) async throws -> [String] {
                try await store.searchEvents(query, now: now, limit: limit).map(\.id)
            }
            try check(try await search(EventQuery()) == newest, "all, newest first, ties by id")
            try check(
                try await search(EventQuery(issuer: "ck_other"))
                    == newest.filter { id in
                        events.first { $0.id == id }!.issuer == "ck_other"
                    }, "by app")
            try check(
                Set(try await search(EventQuery(clientUserID: "alice"))) == Set([0, 2, 4].map { events[$0].id }),
                "by user")
            try check(try await search(EventQuery(status: .approved)) == [events[2].id], "approved")
            try check(Set(try await search(EventQuery(status: .pending))).count == 5, "pending while open")
            try check(
                Set(try await search(EventQuery(status: .expired), now: t0 + 60.5))
                    == Set([0, 1].map { events[$0].id }),
                "expired: pending past its window at the search's time")
            try check(try await search(EventQuery(name: EventName.transaction)) == [events[3].id], "by type")
            try check(try await search(EventQuery(channel: .radius)) == [events[1].id], "by channel")
            try check(try await search(EventQuery(ip: "203.0.113.9")) == [events[5].id], "by address")
            try check(
                Set(try await search(EventQuery(from: t0 + 1, to: t0 + 2))) == Set([2, 3].map { events[$0].id }),
                "from (inclusive) to (exclusive)")
            try check(
                try await search(EventQuery(clientUserID: "alice", status: .pending, from: t0 + 1)) == [events[4].id],
                "filters together")
            // Paged by cursor, ties included: no event twice, none left out.
            var seen: [String] = []
            var cursor: PageCursor? = nil
            repeat {
                let page = try await store.searchEvents(EventQuery(after: cursor), now: t0 + 30, limit: 1)
                seen += page.map(\.id)
                cursor = page.last.map(PageCursor.init(after:))
                if page.isEmpty { break }
            } while seen.count < 20
            try check(seen == newest, "one at a time, as in one page: \(seen)")
            try check(
                PageCursor(text: PageCursor(after: events[3]).text) == PageCursor(after: events[3]),
                "a cursor's text reads back exactly")
        },
        Case(name: "console dashboard: events since a time counted by app, channel, state now, reason and method") {
            store in
            let t0 = Fixture.t0
            let fraud = Fixture.event(at: t0 + 1)
            var totp = Fixture.event(at: t0 + 1)
            totp.storedStatus = .approved
            totp.method = .totp
            var radius = Fixture.event(issuer: "ck_other", at: t0 + 1)
            radius.channel = .radius
            let open = Fixture.event(at: t0 + 30)
            for event in [fraud, totp, radius, open, Fixture.event(at: t0 - 10)] { try await store.insertEvent(event) }
            // A report of fraud is written as the broker writes it: a change of the event.
            _ = try await store.updateEvent(id: fraud.id, spending: nil, now: t0 + 2) { current in
                var reported = current
                reported.storedStatus = .rejected
                reported.storedReason = .fraudReported
                reported.decidedAt = t0 + 2
                return reported
            }
            let tallies = try await store.eventTallies(since: t0, now: t0 + 70)
            let (all, byApp) = EventTotals.of(tallies, by: \.issuer)
            try check(all.total == 4, "since the time only: \(tallies)")
            try check(
                all.rejected == 1 && all.fraudReported == 1 && all.approved == 1 && all.totpFallbacks == 1,
                "reason and method: \(tallies)")
            try check(all.expired == 1 && all.pending == 1, "the state now: pending past its window is expired")
            try check(byApp.map(\.key) == ["ck_app", "ck_other"], "by app")
            try check(tallies.contains { $0.channel == .radius && $0.issuer == "ck_other" }, "by channel")
        },
        Case(name: "console webhooks: an endpoint's messages paged by cursor, ties included, and counted up to a cap") {
            store in
            try await Fixture.apiKey("ck_app", in: store)
            let endpoint = Fixture.endpoint(types: [.eventCreated])
            try await store.insertWebhookEndpoint(endpoint)
            for index in 0..<5 {
                // Two at each time: ties broken by id.
                let at = Fixture.t0 + Double(index / 2)
                try await store.insertPendingEvent(
                    Fixture.event(user: "user-\(index)", at: at), maxPending: 5, now: at)
            }
            let all = try await store.outboxMessages(targets: [endpoint.id], state: .queued, limit: 10)
            try check(all.count == 5, "one message each: \(all.count)")
            var paged: [String] = []
            var cursor: PageCursor? = nil
            repeat {
                let page = try await store.outboxMessages(
                    targets: [endpoint.id], state: .queued, before: cursor, limit: 2)
                paged += page.map(\.id)
                cursor = page.count == 2 ? page.last.map(PageCursor.init(after:)) : nil
            } while cursor != nil && paged.count < 20
            try check(paged == all.map(\.id), "pages of two, as in one, none twice: \(paged) \(all.map(\.id))")
            let counts = [
                try await store.outboxMessageCount(targets: [endpoint.id], state: .queued, cap: 100),
                try await store.outboxMessageCount(targets: [endpoint.id], state: .queued, cap: 3),
                try await store.outboxMessageCount(targets: [endpoint.id], state: .failed, cap: 100),
                try await store.outboxMessageCount(targets: nil, state: .queued, cap: 100),
                try await store.outboxMessageCount(targets: [], state: .queued, cap: 100),
            ]
            try check(counts == [5, 3, 0, 5, 0], "counted, up to the cap, to any target for nil: \(counts)")
        },
        Case(name: "console searches: a NUL in a filter finds nothing; after one, what follows the text before it") {
            store in
            try await Fixture.apiKey("ck_app", in: store)
            _ = try await Fixture.enrolled(in: store, user: "alice")
            try await store.insertEvent(Fixture.event(user: "alice", at: Fixture.t0))
            _ = try await store.appendAudit(AuditRecord(at: Fixture.t0, actor: "alice", action: .signedIn))
            let nul = "alice\0"
            let cursor = PageCursor(createdAt: Fixture.t0 + 1, id: "ev\0")
            try check(try await store.users(prefix: nul, after: nil, limit: 10).isEmpty, "a user prefix")
            _ = try await Fixture.enrolled(in: store, user: "bob")
            let past = try await store.users(prefix: "", after: "alice\0zz", limit: 10).map(\.clientUserID)
            try check(past == ["bob"], "after a NUL: in byte order, as after what comes before it: \(past)")
            for query in [
                EventQuery(issuer: nul), EventQuery(clientUserID: nul), EventQuery(name: nul), EventQuery(ip: nul),
            ] {
                try check(try await store.searchEvents(query, now: Fixture.t0, limit: 10).isEmpty, "\(query)")
            }
            let past2 = try await store.searchEvents(EventQuery(after: cursor), now: Fixture.t0, limit: 10)
            try check(past2.isEmpty, "a cursor no page gave: \(past2)")
            for query in [AuditQuery(actor: nul), AuditQuery(target: nul)] {
                try check(try await store.auditRecords(query, before: nil, limit: 10).isEmpty, "\(query)")
            }
        },
    ]
}
