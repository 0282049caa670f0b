import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let decisionCases: [Case] = [
        Case(name: "decisions: the first one wins, the next is a conflict") { store in
            let device = try await Fixture.enrolled(in: store)
            let event = Fixture.event()
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
            let approve = RecordedDecision(status: .approved, deviceID: device.id, jws: "jws-1")
            let settled = try await store.settleEvent(id: event.id, decision: approve, now: Fixture.t0 + 5)
            try check(settled.storedStatus == .approved && settled.decidedBy == device.id, "approved by the device")
            try check(settled.decision == "jws-1" && settled.decidedAt == Fixture.t0 + 5, "decision kept verbatim")
            let reject = RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws-2")
            let lost = try await checkThrows(.conflict, "second decision") {
                try await store.settleEvent(id: event.id, decision: reject, now: Fixture.t0 + 6)
            }
            try check(lost.event == settled, "the conflict carries the event as the winner left it")
            try check(try await store.event(id: event.id) == settled, "the loser changed nothing")
            try await checkThrows(.notFound, "unknown event") {
                try await store.settleEvent(id: "ev_unknown", decision: reject, now: Fixture.t0)
            }
        },
        Case(name: "decisions: after the window, by a revoked device or another user's device: conflict") { store in
            let device = try await Fixture.enrolled(in: store)
            let bobs = try await Fixture.enrolled(in: store, user: "bob")
            let event = Fixture.event()
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
            let approve = RecordedDecision(status: .approved, deviceID: device.id, jws: "jws")
            try await checkThrows(.conflict, "at the end of the window") {
                try await store.settleEvent(id: event.id, decision: approve, now: event.expiresAt)
            }
            try await checkThrows(.conflict, "another user's device") {
                try await store.settleEvent(
                    id: event.id, decision: RecordedDecision(status: .approved, deviceID: bobs.id, jws: "jws"),
                    now: Fixture.t0 + 1)
            }
            try await checkThrows(.conflict, "an unknown device") {
                try await store.settleEvent(
                    id: event.id, decision: RecordedDecision(status: .approved, deviceID: "nobody", jws: "jws"),
                    now: Fixture.t0 + 1)
            }
            _ = try await store.revokeDevice(
                id: device.id, issuer: "ck_app", clientUserID: "alice", author: Fixture.author, now: Fixture.t0 + 1)
            let revoked = try await checkThrows(.conflict, "a device revoked after the event was created") {
                try await store.settleEvent(id: event.id, decision: approve, now: Fixture.t0 + 2)
            }
            try check(revoked.event == event, "the conflict carries the event, still pending")
            try check(try await store.event(id: event.id) == event, "nothing changed")
        },
        Case(name: "decisions: wrong match numbers count, the last one rejects") { store in
            let event = Fixture.event()
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
            let once = try await store.recordWrongMatch(id: event.id, maxWrong: 3, spending: nil, now: Fixture.t0 + 1)
            try check(once.wrongMatches == 1 && once.storedStatus == .pending, "one wrong, still pending")
            _ = try await store.recordWrongMatch(id: event.id, maxWrong: 3, spending: nil, now: Fixture.t0 + 2)
            let third = try await store.recordWrongMatch(id: event.id, maxWrong: 3, spending: nil, now: Fixture.t0 + 3)
            try check(third.storedStatus == .rejected && third.decidedBy == nil, "the third rejects")
            try check(third.decidedAt == Fixture.t0 + 3, "rejected at that time")
            let fourth = try await checkThrows(.conflict, "a fourth") {
                try await store.recordWrongMatch(id: event.id, maxWrong: 3, spending: nil, now: Fixture.t0 + 4)
            }
            try check(fourth.event == third, "the conflict carries the rejected event")
            try await checkThrows(.notFound, "unknown event") {
                try await store.recordWrongMatch(id: "ev_unknown", maxWrong: 3, spending: nil, now: Fixture.t0)
            }
        },
        Case(name: "decisions: a withdrawn event is closed at once, frees its place and cannot be decided") { store in
            let device = try await Fixture.enrolled(in: store)
            let event = Fixture.event()
            try await store.insertPendingEvent(event, maxPending: 1, now: Fixture.t0)
            let withdrawn = try await store.withdrawEvent(id: event.id, now: Fixture.t0 + 5)
            try check(withdrawn.withdrawnAt == Fixture.t0 + 5 && withdrawn.expiresAt == Fixture.t0 + 5, "closed then")
            try check(withdrawn.status(at: Fixture.t0 + 5) == .expired, "it reads as expired")
            try check(withdrawn.statusReason == .withdrawn, "and says why")
            try check(try await store.event(id: event.id) == withdrawn, "as stored")
            let pending = try await store.events(
                issuer: event.issuer, clientUserID: event.clientUserID, status: .pending, now: Fixture.t0 + 5, limit: 10
            )
            try check(pending.isEmpty, "no longer pending")
            try await checkThrows(.conflict, "a decision after it") {
                try await store.settleEvent(
                    id: event.id, decision: RecordedDecision(status: .approved, deviceID: device.id, jws: "j"),
                    now: Fixture.t0 + 6)
            }
            try await checkThrows(.conflict, "a wrong number after it") {
                try await store.recordWrongMatch(id: event.id, maxWrong: 3, spending: nil, now: Fixture.t0 + 6)
            }
            try await checkThrows(.conflict, "withdrawing twice") {
                try await store.withdrawEvent(id: event.id, now: Fixture.t0 + 6)
            }
            try check(try await store.event(id: event.id) == withdrawn, "none of them changed it")
            var next = Fixture.event()
            next.id = "ev_next"
            try await store.insertPendingEvent(next, maxPending: 1, now: Fixture.t0 + 6)

            let decided = try await store.settleEvent(
                id: next.id, decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "j"),
                now: Fixture.t0 + 7)
            let late = try await checkThrows(.conflict, "withdrawing a decided event") {
                try await store.withdrawEvent(id: next.id, now: Fixture.t0 + 8)
            }
            try check(late.event == decided, "the conflict carries the decided event")
            try check(try await store.event(id: next.id) == decided, "leaves the decision")
            try await checkThrows(.notFound, "an unknown event") {
                try await store.withdrawEvent(id: "ev_unknown", now: Fixture.t0)
            }
        },
        Case(name: "decisions: a decision's id is spent with its write, and a replayed id changes nothing") { store in
            let device = try await Fixture.enrolled(in: store)
            let event = Fixture.event()
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
            func id(_ jti: String) -> SpentProofID {
                SpentProofID(jti: jti, deviceID: device.id, expiresAt: Fixture.t0 + 120)
            }
            try await store.consumeProofID("d1", deviceID: device.id, expiresAt: Fixture.t0 + 120, now: Fixture.t0)
            try await checkThrows(.replayed, "a settling decision with a used id") {
                try await store.settleEvent(
                    id: event.id,
                    decision: RecordedDecision(status: .approved, deviceID: device.id, jws: "j", spends: id("d1")),
                    now: Fixture.t0 + 1)
            }
            try await checkThrows(.replayed, "a wrong number with a used id") {
                try await store.recordWrongMatch(id: event.id, maxWrong: 3, spending: id("d1"), now: Fixture.t0 + 1)
            }
            try check(try await store.event(id: event.id) == event, "neither changed the event")

            let wrong = try await store.recordWrongMatch(
                id: event.id, maxWrong: 3, spending: id("d2"), now: Fixture.t0 + 2)
            try check(wrong.wrongMatches == 1, "a wrong number with a new id counts")
            try await checkThrows(.replayed, "the same wrong number again") {
                try await store.recordWrongMatch(id: event.id, maxWrong: 3, spending: id("d2"), now: Fixture.t0 + 3)
            }
            try check(try await store.event(id: event.id)?.wrongMatches == 1, "and is not counted twice")

            let settled = try await store.settleEvent(
                id: event.id,
                decision: RecordedDecision(status: .approved, deviceID: device.id, jws: "j", spends: id("d3")),
                now: Fixture.t0 + 4)
            try check(settled.storedStatus == .approved, "a new id settles")
            try await checkThrows(.replayed, "the settling decision's id is spent") {
                try await store.consumeProofID(
                    "d3", deviceID: device.id, expiresAt: Fixture.t0 + 120, now: Fixture.t0 + 5)
            }
            try await store.consumeProofID("d3", deviceID: "another", expiresAt: Fixture.t0 + 120, now: Fixture.t0 + 5)
        },
        Case(name: "decisions: a pairing approval with a used id enrolls nothing") { store in
            let (approver, candidate, event) = try await Fixture.pairing(in: store, user: "frank")
            try await store.consumeProofID("p1", deviceID: approver.id, expiresAt: Fixture.t0 + 120, now: Fixture.t0)
            let replayed = RecordedDecision(
                status: .approved, deviceID: approver.id, jws: "yes", enrolls: candidate,
                spends: SpentProofID(jti: "p1", deviceID: approver.id, expiresAt: Fixture.t0 + 120))
            try await checkThrows(.replayed, "a replayed pairing approval") {
                try await store.settleEvent(id: event.id, decision: replayed, now: Fixture.t0 + 1)
            }
            try check(try await store.device(id: candidate.id) == nil, "nothing enrolled")
            try check(try await store.event(id: event.id) == event, "the event unchanged")
        },
        Case(name: "decisions: of many concurrent answers exactly one wins") { store in
            let devices = [try await Fixture.enrolled(in: store), try await Fixture.enrolled(in: store)]
            for _ in 0..<5 {
                let event = Fixture.event()
                try await store.insertEvent(event)
                let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for attempt in 0..<16 {
                        group.addTask {
                            let decision = RecordedDecision(
                                status: attempt.isMultiple(of: 2) ? .approved : .rejected,
                                deviceID: devices[attempt % 2].id, jws: "jws-\(attempt)")
                            do {
                                _ = try await store.settleEvent(id: event.id, decision: decision, now: Fixture.t0 + 1)
                                return true
                            } catch let error as StoreError where error.code == .conflict {
                                return false
                            }
                        }
                    }
                    return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                }
                try check(winners == 1, "exactly one winner, got \(winners)")
            }
        },
    ]
}
