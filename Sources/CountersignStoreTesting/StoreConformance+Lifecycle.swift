import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let lifecycleCases: [Case] = [
        Case(name: "audit: every enrollment and the first revocation are recorded, newest first") { store in
            let first = Fixture.device(user: "erin")
            try await store.enrollFirstDevice(
                first, author: ChangeAuthor(actor: ChangeAuthor.verifiedIdentifier, ip: "198.51.100.7"),
                now: Fixture.t0)
            let second = try await Fixture.enrolled(in: store, user: "erin")
            let backend = ChangeAuthor(actor: ChangeAuthor.backend, ip: "203.0.113.9")
            _ = try await store.revokeDevice(
                id: first.id, issuer: "ck_app", clientUserID: "erin", author: backend, now: Fixture.t0 + 10)
            _ = try await store.revokeDevice(
                id: first.id, issuer: "ck_app", clientUserID: "erin", author: Fixture.author, now: Fixture.t0 + 20)
            let log = try await store.deviceChanges(issuer: "ck_app", clientUserID: "erin", limit: 10)
            try check(log.count == 3, "two enrollments and one revocation, not two")
            try check(
                log[0]
                    == DeviceChange(
                        issuer: "ck_app", clientUserID: "erin", deviceID: first.id, deviceName: first.name,
                        action: .revoked, author: backend, at: Fixture.t0 + 10), "the revocation, by whom and where")
            try check(log[1].deviceID == second.id && log[1].author == Fixture.author, "the token enrollment")
            try check(
                log[2].action == .enrolled && log[2].author.actor == ChangeAuthor.verifiedIdentifier
                    && log[2].author.ip == "198.51.100.7", "the first enrollment")
            try check(
                try await store.deviceChanges(issuer: "ck_app", clientUserID: "erin", limit: 1) == [log[0]],
                "limit keeps the newest")
            try check(
                try await store.deviceChanges(issuer: "ck_other", clientUserID: "erin", limit: 10).isEmpty,
                "another app's user sees nothing")
            _ = try await store.garbageCollect(
                now: Fixture.t0 + 400 * 86400, eventsEndedBefore: Fixture.t0 + 400 * 86400)
            try check(
                try await store.deviceChanges(issuer: "ck_app", clientUserID: "erin", limit: 10).count == 3,
                "the audit log outlives garbage collection")
        },
        Case(name: "pairing: an approval enrolls the event's new device; a rejection or a loss enrolls nothing") {
            store in
            let (approver, candidate, event) = try await Fixture.pairing(in: store, user: "frank")
            try check(try await store.event(id: event.id)?.newDevice == event.newDevice, "the new device reads back")

            var rejected = Fixture.event(user: "frank")
            rejected.newDevice = event.newDevice
            try await store.insertPendingEvent(rejected, maxPending: 3, now: Fixture.t0)
            _ = try await store.settleEvent(
                id: rejected.id,
                decision: RecordedDecision(status: .rejected, deviceID: approver.id, jws: "no", enrolls: candidate),
                now: Fixture.t0 + 1)
            try check(try await store.device(id: candidate.id) == nil, "a rejection enrolls nothing")

            let approval = RecordedDecision(
                status: .approved, deviceID: approver.id, jws: "yes", enrolls: candidate, ip: "192.0.2.44")
            let settled = try await store.settleEvent(id: event.id, decision: approval, now: Fixture.t0 + 2)
            try check(settled.storedStatus == .approved, "approved")
            try check(try await store.device(id: candidate.id) == candidate, "the new device is trusted")
            let log = try await store.deviceChanges(issuer: "ck_app", clientUserID: "frank", limit: 1)
            try check(
                log.first?.deviceID == candidate.id
                    && log.first?.author == ChangeAuthor(actor: approver.id, ip: "192.0.2.44"),
                "recorded as the approver's doing")

            var again = Fixture.event(user: "frank")
            again.newDevice = event.newDevice
            try await store.insertPendingEvent(again, maxPending: 3, now: Fixture.t0 + 3)
            try await checkThrows(.alreadyExists, "the same key twice") {
                try await store.settleEvent(id: again.id, decision: approval, now: Fixture.t0 + 4)
            }
            try check(try await store.event(id: again.id)?.storedStatus == .pending, "and the event stays pending")
        },
    ]
}
