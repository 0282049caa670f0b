import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let eventCases: [Case] = [
        Case(name: "events: a pending event reads back exactly") { store in
            let event = Fixture.event()
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
            try check(try await store.event(id: event.id) == event, "the event reads back as written")
            try check(try await store.event(id: "ev_unknown") == nil, "an unknown id is nil")
            try await checkThrows(.alreadyExists, "duplicate event id") { try await store.insertEvent(event) }
            for channel in EventChannel.allCases {
                var through = Fixture.event(user: "user-\(channel.rawValue)")
                through.channel = channel
                try await store.insertPendingEvent(through, maxPending: 3, now: Fixture.t0)
                try check(try await store.event(id: through.id)?.channel == channel, "its channel, \(channel)")
            }
        },
        Case(name: "events: the pending cap counts only open events of that user") { store in
            try await store.insertPendingEvent(Fixture.event(at: Fixture.t0 - 100), maxPending: 2, now: Fixture.t0)
            try await store.insertPendingEvent(Fixture.event(at: Fixture.t0), maxPending: 2, now: Fixture.t0)
            try await store.insertPendingEvent(Fixture.event(at: Fixture.t0 + 10), maxPending: 2, now: Fixture.t0 + 10)
            let refused = Fixture.event(at: Fixture.t0 + 20)
            try await checkThrows(.limitReached(retryAfter: 40), "third open event") {
                try await store.insertPendingEvent(refused, maxPending: 2, now: Fixture.t0 + 20)
            }
            try check(try await store.event(id: refused.id) == nil, "the refused event was not stored")
            try await store.insertPendingEvent(Fixture.event(user: "bob"), maxPending: 2, now: Fixture.t0 + 20)
            try await store.insertPendingEvent(Fixture.event(at: Fixture.t0 + 60), maxPending: 2, now: Fixture.t0 + 60)
        },
        Case(
            name:
                "events: requesters' pending events never count against the backend's, nor one address's against another's"
        ) { store in
            let limits = PendingLimits(perUser: 2, perUserFromRequesters: 3, perAddress: 4)
            func requested(_ user: String, from address: String, at: Date = Fixture.t0) -> ApprovalEvent {
                var event = Fixture.event(user: user, at: at)
                event.ip = address
                return event
            }
            let attacker = PendingRequester.requester(address: "203.0.113.9")
            // The attacker fills alice's share for its address.
            try await store.insertPendingEvent(
                requested("alice", from: "203.0.113.9"), by: attacker, limits: limits, announcing: [], now: Fixture.t0)
            try await store.insertPendingEvent(
                requested("alice", from: "203.0.113.9", at: Fixture.t0 + 5), by: attacker, limits: limits,
                announcing: [],
                now: Fixture.t0 + 5)
            let refused = requested("alice", from: "203.0.113.9", at: Fixture.t0 + 10)
            try await checkThrows(.limitReached(retryAfter: 50), "a third from the same address") {
                try await store.insertPendingEvent(
                    refused, by: attacker, limits: limits, announcing: [], now: Fixture.t0 + 10)
            }
            try check(try await store.event(id: refused.id) == nil, "the refused event was not stored")
            // The backend's own, and alice's own login from elsewhere, still go through.
            for _ in 0..<2 {
                try await store.insertPendingEvent(
                    Fixture.event(at: Fixture.t0 + 10), by: .backend, limits: limits, announcing: [],
                    now: Fixture.t0 + 10)
            }
            try await store.insertPendingEvent(
                requested("alice", from: "198.51.100.7", at: Fixture.t0 + 10),
                by: .requester(address: "198.51.100.7"), limits: limits, announcing: [], now: Fixture.t0 + 10)
            // alice has 3 from requesters now: a fourth address is refused.
            try await checkThrows(.limitReached(retryAfter: 50), "past alice's share from all requesters") {
                try await store.insertPendingEvent(
                    requested("alice", from: "192.0.2.1", at: Fixture.t0 + 10), by: .requester(address: "192.0.2.1"),
                    limits: limits, announcing: [], now: Fixture.t0 + 10)
            }
            // One address, many users: 2 for alice, then bob and carol, then no more.
            try await store.insertPendingEvent(
                requested("bob", from: "203.0.113.9"), by: attacker, limits: limits, announcing: [],
                now: Fixture.t0 + 10)
            try await store.insertPendingEvent(
                requested("carol", from: "203.0.113.9"), by: attacker, limits: limits, announcing: [],
                now: Fixture.t0 + 10)
            try await checkThrows(.limitReached(retryAfter: 50), "past the address's share") {
                try await store.insertPendingEvent(
                    requested("dave", from: "203.0.113.9", at: Fixture.t0 + 10), by: attacker, limits: limits,
                    announcing: [],
                    now: Fixture.t0 + 10)
            }
            // The backend's own are counted apart: a third is refused by its own cap.
            try await checkThrows(.limitReached(retryAfter: 60), "the backend's third") {
                try await store.insertPendingEvent(
                    Fixture.event(at: Fixture.t0 + 10), by: .backend, limits: limits, announcing: [],
                    now: Fixture.t0 + 10)
            }
            // Once the attacker's first two expire, the address has room again.
            try await store.insertPendingEvent(
                requested("dave", from: "203.0.113.9", at: Fixture.t0 + 66), by: attacker, limits: limits,
                announcing: [],
                now: Fixture.t0 + 66)
        },
        Case(name: "events: of many creations at once for one user, only the pending cap succeed") { store in
            for round in 0..<5 {
                let user = "racer-\(round)"
                let created = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for _ in 0..<16 {
                        group.addTask {
                            do {
                                try await store.insertPendingEvent(
                                    Fixture.event(user: user), maxPending: 3, now: Fixture.t0)
                                return true
                            } catch let error as StoreError where error.code == .limitReached(retryAfter: 60) {
                                return false
                            }
                        }
                    }
                    return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                }
                try check(created == 3, "exactly the cap of 3 created, got \(created)")
                let stored = try await store.events(
                    issuer: "ck_app", clientUserID: user, status: .pending, now: Fixture.t0, limit: 100)
                try check(stored.count == 3, "3 stored, found \(stored.count)")
            }
        },
        Case(name: "events: listed newest first, filtered by status as of now") { store in
            let expired = Fixture.event(at: Fixture.t0 - 120)
            let pending = Fixture.event(at: Fixture.t0 - 10)
            var approved = Fixture.event(at: Fixture.t0 - 20)
            approved.storedStatus = .approved
            try await store.insertEvent(expired)
            try await store.insertEvent(pending)
            try await store.insertEvent(approved)
            try await store.insertEvent(Fixture.event(user: "bob"))
            let all = try await store.events(
                issuer: "ck_app", clientUserID: "alice", status: nil, now: Fixture.t0, limit: 10)
            try check(all.map(\.id) == [pending.id, approved.id, expired.id], "newest first, only alice's")
            for (status, expected) in [(EventStatus.pending, pending), (.expired, expired), (.approved, approved)] {
                let listed = try await store.events(
                    issuer: "ck_app", clientUserID: "alice", status: status, now: Fixture.t0, limit: 10)
                try check(listed.map(\.id) == [expected.id], "filter \(status)")
            }
            let limited = try await store.events(
                issuer: "ck_app", clientUserID: "alice", status: nil, now: Fixture.t0, limit: 1)
            try check(limited.map(\.id) == [pending.id], "limit applies")
        },
    ]
}
