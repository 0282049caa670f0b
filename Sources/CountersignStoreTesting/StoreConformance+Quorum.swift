import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let quorumCases: [Case] = [
        Case(name: "quorum: an event is in its approvers' inboxes, not its requester's") { store in
            let quorumEvent = Fixture.quorumEvent(requester: "dave", approvers: ["alice", "bob", "dave"])
            try await store.insertPendingEvent(quorumEvent, maxPending: 3, now: Fixture.t0)
            let own = Fixture.event(user: "alice", at: Fixture.t0 + 1)
            try await store.insertPendingEvent(own, maxPending: 3, now: Fixture.t0 + 1)
            let stored = try await store.event(id: quorumEvent.id)
            try check(stored == quorumEvent, "read back with its quorum: \(String(describing: stored?.quorum))")
            func inbox(_ user: String, at now: Date = Fixture.t0 + 2, issuer: String = "ck_app") async throws
                -> [String]
            {
                try await store.inboxEvents(issuer: issuer, clientUserID: user, now: now, limit: 20).map(\.id)
            }
            try check(try await inbox("alice") == [own.id, quorumEvent.id], "alice's own and the one she approves")
            try check(try await inbox("bob") == [quorumEvent.id], "bob approves it")
            try check(try await inbox("dave").isEmpty, "the requester, left out of the quorum, is not asked")
            try check(try await inbox("bob", issuer: "ck_other").isEmpty, "not another app's bob")
            try check(try await inbox("bob", at: quorumEvent.expiresAt).isEmpty, "gone when it expires")
            try check(
                try await store.events(
                    issuer: "ck_app", clientUserID: "dave", status: .pending, now: Fixture.t0 + 2,
                    limit: 5
                ).map(\.id) == [quorumEvent.id], "still the requester's event")
            _ = try await store.withdrawEvent(id: quorumEvent.id, now: Fixture.t0 + 3)
            try check(try await inbox("bob", at: Fixture.t0 + 4).isEmpty, "gone once withdrawn")
            try check(
                try await store.garbageCollect(now: Fixture.t0 + 7200, eventsEndedBefore: Fixture.t0 + 7200) > 0,
                "collected")
            try check(try await store.event(id: quorumEvent.id) == nil, "the event went")
        },
        Case(name: "quorum: approvals are judged in the transaction that counts them") { store in
            try await Fixture.apiKey("ck_app", in: store)
            let endpoint = Fixture.endpoint()
            try await store.insertWebhookEndpoint(endpoint)
            let alice = try await Fixture.enrolled(in: store, user: "alice")
            let alicesPhone = try await Fixture.enrolled(in: store, user: "alice")
            let bob = try await Fixture.enrolled(in: store, user: "bob")
            let event = Fixture.quorumEvent(requester: "dave", approvers: ["alice", "bob", "carol"])
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)

            let (once, first) = try await store.approve(event.id, by: alice, jti: "a1", now: Fixture.t0 + 1)
            try check(first == .countApproval && once.storedStatus == .pending, "one of two: \(first)")
            try check(once.approvals.map(\.deviceID) == [alice.id], "alice's approval kept")
            try check(try await store.event(id: event.id) == once, "written: \(String(describing: once.approvals))")
            let (same, again) = try await store.approve(event.id, by: alicesPhone, jti: "a2", now: Fixture.t0 + 2)
            try check(again == .refused(.alreadyApproved) && same == once, "her second device does not count")
            try await checkThrows(.replayed, "a decision id spent by the refusal") {
                try await store.approve(event.id, by: alicesPhone, jti: "a2", now: Fixture.t0 + 2)
            }
            try await checkThrows(.replayed, "alice's decision again") {
                try await store.approve(event.id, by: alice, jti: "a1", now: Fixture.t0 + 2)
            }
            let (unknown, nobody) = try await store.approve(
                event.id, by: Fixture.device(user: "carol"), jti: "c1", now: Fixture.t0 + 2)
            try check(nobody == .refused(.revokedDevice) && unknown == once, "a device the store does not know")
            let (done, second) = try await store.approve(event.id, by: bob, jti: "b1", now: Fixture.t0 + 3)
            try check(second == .countApproval && done.storedStatus == .approved, "two of two: approved")
            try check(done.decidedBy == bob.id && done.decision == "jws-b1", "the last approval decides it")
            try check(try await store.event(id: event.id) == done, "written")
            let records = try await store.decisionRecords(issuer: "ck_app", clientUserID: "dave", limit: 5)
            try check(records.map(\.eventID) == [event.id], "its decision record is the requester's")
            let types = try await Fixture.webhooks(in: store, to: endpoint.id).map(\.type).filter {
                $0.hasPrefix("event.")
            }
            try check(
                types == ["event.created", "event.approval_added", "event.approved"],
                "the approval added, then the approval: \(types)")
            try await checkThrows(.notFound, "an unknown event") {
                try await store.approve("ev_unknown", by: bob, jti: "b2", now: Fixture.t0 + 4)
            }
        },
        Case(name: "quorum: approvals arriving together are each counted once") { store in
            var approvers: [TrustedDevice] = []
            for user in ["alice", "bob", "carol", "erin"] {
                approvers.append(try await Fixture.enrolled(in: store, user: user))
                approvers.append(try await Fixture.enrolled(in: store, user: user))
            }
            let event = Fixture.quorumEvent(
                requester: "dave", approvers: ["alice", "bob", "carol", "erin"], required: 3)
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
            let outcomes = try await withThrowingTaskGroup(of: DecisionOutcome.self) { group in
                for (index, device) in approvers.enumerated() {
                    group.addTask {
                        try await store.approve(event.id, by: device, jti: "j\(index)", now: Fixture.t0 + 1).1
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let stored = try await store.event(id: event.id)
            try check(stored != nil, "the event is there")
            guard let after = stored else { return }
            try check(after.storedStatus == .approved, "approved")
            try check(after.approvals.count == 3, "exactly the quorum: \(after.approvals.map(\.clientUserID))")
            try check(Set(after.approvals.map(\.clientUserID)).count == 3, "three people")
            try check(outcomes.filter { $0 == .countApproval }.count == 3, "three counted: \(outcomes)")
            try check(
                outcomes.allSatisfy {
                    [.countApproval, .refused(.alreadyApproved), .refused(.alreadyDecided)].contains($0)
                },
                "the others refused, none lost")
        },
    ]
}

extension Fixture {
    /// A pending transaction `requester` asks `approvers` to approve,
    /// `required` of them.
    static func quorumEvent(requester: String, approvers: [String], required: Int = 2) -> ApprovalEvent {
        var event = event(user: requester, match: nil)
        event.name = EventName.transaction
        event.details = "Pay 5,000 EUR to ACME"
        event.quorum = ApproverQuorum(users: approvers, requiredApprovals: required)
        return event
    }
}

extension CountersignStore {
    /// An approval by `device` through the decision updater, judged by the
    /// rule in Core as the broker's transition does.
    func approve(_ id: String, by device: TrustedDevice, jti: String, now: Date) async throws
        -> (ApprovalEvent, DecisionOutcome)
    {
        let claims = DecisionClaims(evt: id, nonce: "n", decision: .approve, match: nil, aud: "x", iat: 0, jti: jti)
        return try await updateEvent(
            id: id, decidedBy: device.id,
            spending: SpentProofID(jti: "decision:" + jti, deviceID: device.id, expiresAt: now + 120), passkey: nil,
            now: now
        ) { event, stored in
            guard let stored else { return (event, .refused(.revokedDevice)) }
            let outcome = DecisionRules.evaluate(claims, by: stored, on: event, now: now)
            guard outcome == .countApproval else { return (event, outcome) }
            let approval = QuorumApproval(
                clientUserID: stored.clientUserID, deviceID: stored.id, decision: "jws-" + jti, approvedAt: now)
            return (event.approved(with: approval, now: now), outcome)
        }
    }
}
