import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let fraudCases: [Case] = [
        Case(name: "fraud: a report rejects the event and the user's other pending ones, and protects the user") {
            store in
            try await Fixture.apiKey("ck_app", in: store)
            let endpoint = Fixture.endpoint()
            try await store.insertWebhookEndpoint(endpoint)
            let device = try await Fixture.enrolled(in: store)
            let limits = PendingLimits(perUser: 5)
            let bomb = Fixture.event()
            let second = Fixture.event()
            let withdrawn = Fixture.event()
            let bobs = Fixture.event(user: "bob")
            for event in [bomb, second, withdrawn, bobs] {
                try await store.insertPendingEvent(
                    event, by: .requester(address: "198.51.100.7"), limits: limits, announcing: [], now: Fixture.t0)
            }
            _ = try await store.withdrawEvent(id: withdrawn.id, now: Fixture.t0 + 1)
            let spent = SpentProofID(jti: "decision:fraud-1", deviceID: device.id, expiresAt: Fixture.t0 + 600)
            let report = try await store.reportFraud(
                id: bomb.id,
                decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws-fraud", spends: spent),
                protectUntil: Fixture.t0 + 900, now: Fixture.t0 + 2)
            try check(
                report.event.id == bomb.id && report.event.status(at: Fixture.t0 + 2) == .rejected
                    && report.event.statusReason == .fraudReported && report.event.decidedBy == device.id
                    && report.event.decision == "jws-fraud", "the reported event, rejected as fraud")
            try check(report.alsoRejected.map(\.id) == [second.id], "the user's other pending event, not the withdrawn")
            try check(report.protectedUntil == Fixture.t0 + 900, "protected until")
            let other = try await store.event(id: second.id)
            try check(
                other?.storedStatus == .rejected && other?.statusReason == .userProtected && other?.decidedBy == nil,
                "rejected with no deciding device, as protection")
            try check(try await store.event(id: bobs.id)?.storedStatus == .pending, "another user's stays pending")
            try check(try await store.event(id: withdrawn.id)?.statusReason == .withdrawn, "the withdrawn one stays")

            // Requesters are refused until the protection ends; the backend is not.
            try await checkThrows(.userProtected(retryAfter: 890), "a requester's new event while protected") {
                try await store.insertPendingEvent(
                    Fixture.event(at: Fixture.t0 + 10), by: .requester(address: "203.0.113.9"), limits: limits,
                    announcing: [], now: Fixture.t0 + 10)
            }
            try await store.insertPendingEvent(
                Fixture.event(at: Fixture.t0 + 10), by: .backend, limits: limits, announcing: [], now: Fixture.t0 + 10)
            try await store.insertPendingEvent(
                Fixture.event(user: "bob", at: Fixture.t0 + 10), by: .requester(address: "203.0.113.9"),
                limits: limits, announcing: [], now: Fixture.t0 + 10)
            try await store.insertPendingEvent(
                Fixture.event(at: Fixture.t0 + 900), by: .requester(address: "203.0.113.9"), limits: limits,
                announcing: [], now: Fixture.t0 + 900)

            let sent = try await Fixture.webhooks(in: store, to: endpoint.id).filter { $0.at == Fixture.t0 + 2 }
            try check(
                sent.map { "\($0.type) \($0.subject)" }.sorted()
                    == ["event.rejected \(bomb.id)", "event.rejected \(second.id)", "fraud.reported \(bomb.id)"]
                    .sorted(), "\(sent.map(\.type))")
            try await checkThrows(.replayed, "the same decision id again") {
                try await store.reportFraud(
                    id: second.id,
                    decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws", spends: spent),
                    protectUntil: Fixture.t0 + 900, now: Fixture.t0 + 3)
            }
        },
        Case(name: "rates: requesters' events per user and per address within the window, answered or not") { store in
            let limits = PendingLimits(
                perUser: 100, perUserFromRequesters: 100, perAddress: 100, requestsPerUser: 3, requestsPerAddress: 5,
                rateWindow: 600)
            func ask(_ user: String, from address: String, at offset: TimeInterval) async throws {
                var event = Fixture.event(user: user, at: Fixture.t0 + offset)
                event.ip = address
                try await store.insertPendingEvent(
                    event, by: .requester(address: address), limits: limits, announcing: [],
                    now: Fixture.t0 + offset)
                // Answered at once: only the rate counts it.
                _ = try await store.withdrawEvent(id: event.id, now: Fixture.t0 + offset)
            }
            // Counted by minute (RequestRate): an event counts until the end
            // of its minute has left the window, so these free up to a minute
            // later than their own times would.
            for offset in [0.0, 100, 200] { try await ask("alice", from: "198.51.100.1", at: offset) }
            try await checkThrows(.limitReached(retryAfter: 360), "a fourth for alice within the window") {
                try await ask("alice", from: "198.51.100.2", at: 300)
            }
            try await store.insertPendingEvent(
                Fixture.event(at: Fixture.t0 + 300), by: .backend, limits: limits, announcing: [],
                now: Fixture.t0 + 300)
            try await ask("bob", from: "198.51.100.1", at: 300)
            try await ask("carol", from: "198.51.100.1", at: 310)
            try await checkThrows(.limitReached(retryAfter: 350), "a sixth from one address within the window") {
                try await ask("dave", from: "198.51.100.1", at: 310)
            }
            try await ask("dave", from: "198.51.100.3", at: 310)
            try await checkThrows(.limitReached(retryAfter: 59), "alice's first minute is still in the window") {
                try await ask("alice", from: "198.51.100.2", at: 601)
            }
            try await ask("alice", from: "198.51.100.2", at: 660)
            try await checkThrows(.limitReached(retryAfter: 60), "and her second's events are counted still") {
                try await ask("alice", from: "198.51.100.2", at: 660)
            }
        },
        Case(name: "rejections: a user's rejected events are counted from a time on, whoever rejected them") { store in
            let device = try await Fixture.enrolled(in: store)
            let events = (0..<4).map { _ in Fixture.event() }
            for event in events + [Fixture.event(user: "bob")] {
                try await store.insertPendingEvent(event, maxPending: 10, now: Fixture.t0)
            }
            _ = try await store.settleEvent(
                id: events[0].id, decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws"),
                now: Fixture.t0 + 1)
            _ = try await store.recordWrongMatch(id: events[1].id, maxWrong: 1, spending: nil, now: Fixture.t0 + 5)
            _ = try await store.settleEvent(
                id: events[2].id, decision: RecordedDecision(status: .approved, deviceID: device.id, jws: "jws"),
                now: Fixture.t0 + 6)
            let second = try await Fixture.enrolled(in: store)
            let alice = try await store.devicesAndRejections(
                issuer: "ck_app", clientUserID: "alice", rejectedSince: Fixture.t0)
            try check(alice.rejected == 2, "a device's rejection and the last wrong number")
            let aliceDevices = try await store.devices(issuer: "ck_app", clientUserID: "alice")
            try check(
                Set(alice.devices.map(\.id)) == [device.id, second.id] && alice.devices == aliceDevices,
                "with her devices, as they are read alone")
            try check(
                try await store.devicesAndRejections(
                    issuer: "ck_app", clientUserID: "alice", rejectedSince: Fixture.t0 + 2
                ).rejected == 1, "only those at or after the time")
            let bob = try await store.devicesAndRejections(
                issuer: "ck_app", clientUserID: "bob", rejectedSince: Fixture.t0)
            try check(bob.rejected == 0 && bob.devices.isEmpty, "another user's, who has no device")
        },
        Case(name: "decisions: every approval and rejection is recorded with its event, and outlives it") { store in
            let device = try await Fixture.enrolled(in: store)
            let events = (0..<5).map { _ in Fixture.event() }
            for event in events { try await store.insertPendingEvent(event, maxPending: 10, now: Fixture.t0) }
            _ = try await store.settleEvent(
                id: events[0].id, decision: RecordedDecision(status: .approved, deviceID: device.id, jws: "jws-ok"),
                now: Fixture.t0 + 1)
            _ = try await store.recordWrongMatch(id: events[1].id, maxWrong: 1, spending: nil, now: Fixture.t0 + 2)
            _ = try await store.withdrawEvent(id: events[2].id, now: Fixture.t0 + 3)
            _ = try await store.reportFraud(
                id: events[3].id, decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws-fraud"),
                protectUntil: Fixture.t0 + 900, now: Fixture.t0 + 4)
            // A refused decision records nothing.
            try await checkThrows(.conflict, "deciding a decided event") {
                try await store.settleEvent(
                    id: events[0].id, decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "x"),
                    now: Fixture.t0 + 5)
            }
            struct Shown: Decodable {
                let ID: String
                let status: String
                let decided_by: String?
                let decision: String?
                let status_reason: String?
            }
            func recorded() async throws -> [Shown] {
                try await store.decisionRecords(issuer: "ck_app", clientUserID: "alice", limit: 10).map {
                    try JSONDecoder().decode(Shown.self, from: $0.document)
                }
            }
            let records = try await recorded()
            try check(
                records.map(\.ID) == [events[3].id, events[4].id, events[1].id, events[0].id]
                    || records.map(\.ID) == [events[4].id, events[3].id, events[1].id, events[0].id],
                "newest first, the withdrawn one not: \(records.map(\.ID))")
            let approved = records.first { $0.ID == events[0].id }
            try check(
                approved?.status == "approved" && approved?.decided_by == device.id && approved?.decision == "jws-ok",
                "who decided, with the signed decision")
            try check(
                records.first { $0.ID == events[3].id }?.status_reason == "fraud_reported"
                    && records.first { $0.ID == events[4].id }?.status_reason == "user_protected"
                    && records.first { $0.ID == events[1].id }?.status_reason == "too_many_wrong_matches",
                "why each was rejected")
            try check(
                try await store.decisionRecords(issuer: "ck_app", clientUserID: "alice", limit: 2).count == 2, "limit")
            try await store.garbageCollect(now: Fixture.t0 + 86400, eventsEndedBefore: Fixture.t0 + 86400)
            try check(try await store.event(id: events[0].id) == nil, "the event is collected")
            try check(try await recorded().count == 4, "its decision is kept")
            try check(
                try await store.decisionRecords(issuer: "ck_app", clientUserID: "bob", limit: 10).isEmpty,
                "per user")
        },
        Case(name: "fraud: a report on a decided event changes nothing; a later report never shortens protection") {
            store in
            let device = try await Fixture.enrolled(in: store)
            let decided = Fixture.event()
            let pending = Fixture.event()
            for event in [decided, pending] {
                try await store.insertPendingEvent(event, maxPending: 5, now: Fixture.t0)
            }
            _ = try await store.settleEvent(
                id: decided.id, decision: RecordedDecision(status: .approved, deviceID: device.id, jws: "jws"),
                now: Fixture.t0 + 1)
            try await checkThrows(.conflict, "a report on a decided event") {
                try await store.reportFraud(
                    id: decided.id, decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws"),
                    protectUntil: Fixture.t0 + 900, now: Fixture.t0 + 2)
            }
            try check(try await store.event(id: pending.id)?.storedStatus == .pending, "nothing else was rejected")
            try await store.insertPendingEvent(
                Fixture.event(at: Fixture.t0 + 3), by: .requester(address: "203.0.113.9"),
                limits: PendingLimits(perUser: 5), announcing: [], now: Fixture.t0 + 3)
            try await checkThrows(.notFound, "a report on an unknown event") {
                try await store.reportFraud(
                    id: "ev_none", decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws"),
                    protectUntil: Fixture.t0 + 900, now: Fixture.t0 + 2)
            }
            _ = try await store.reportFraud(
                id: pending.id, decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws"),
                protectUntil: Fixture.t0 + 2000, now: Fixture.t0 + 4)
            let third = Fixture.event(at: Fixture.t0 + 5)
            try await store.insertPendingEvent(third, maxPending: 5, now: Fixture.t0 + 5)
            let report = try await store.reportFraud(
                id: third.id, decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws"),
                protectUntil: Fixture.t0 + 905, now: Fixture.t0 + 5)
            try check(report.protectedUntil == Fixture.t0 + 2000, "the longer protection stands")
            try check(
                try await store.garbageCollect(now: Fixture.t0 + 1000, eventsEndedBefore: Fixture.t0) >= 0
                    && true, "collected")
            try await checkThrows(.userProtected(retryAfter: 1000), "still protected after a collection") {
                try await store.insertPendingEvent(
                    Fixture.event(at: Fixture.t0 + 1000), by: .requester(address: "203.0.113.9"),
                    limits: PendingLimits(perUser: 5), announcing: [], now: Fixture.t0 + 1000)
            }
        },
    ]
}
