import CountersignBroker
import CountersignCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// Every decision here is refused with a clear 4xx and changes nothing.
@Suite("attacks on decisions")
struct DecisionAttackTests {
    /// A broker with alice's device, a pending login, and its inbox item.
    struct Scene {
        let broker: TestBroker
        let alice: TestBroker.Enrolled
        let ticket: EventTicket
        let item: InboxItem
    }

    func scene(_ broker: TestBroker, _ client: some TestClientProtocol) async throws -> Scene {
        let alice = try await broker.enroll(client)
        let ticket = try await broker.requestLogin(client)
        let item = try #require(try await broker.inbox(client, alice.device).first { $0.event.ID == ticket.event.ID })
        return Scene(broker: broker, alice: alice, ticket: ticket, item: item)
    }

    /// The event is still pending, as its requester sees it.
    func expectUnchanged(_ scene: Scene, _ client: some TestClientProtocol) async throws {
        let event = try await scene.broker.poll(client, scene.ticket)
        #expect(event.status == .pending && event.decidedBy == nil && event.decision == nil)
    }

    @Test("a replayed decision is refused and the first stands")
    func replay() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let s = try await scene(broker, client)
            let decision = try await s.alice.device.decision(
                on: s.item, .reject, match: nil, now: broker.clock.now)
            #expect(try await broker.submit(client, eventID: s.item.event.ID, decision: decision).status == .ok)
            let replayed = try await broker.submit(client, eventID: s.item.event.ID, decision: decision)
            #expect(replayed.status == .conflict && errorCode(replayed) == "replayed_decision")
            #expect(try await broker.poll(client, s.ticket).status == .rejected)
        }
    }

    @Test("a second decision after the first is refused: first decision wins")
    func secondDecision() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let s = try await scene(broker, client)
            let second = try await broker.enroll(client)
            let number = try #require(s.ticket.matchNumber)
            let approve = try await s.alice.device.decision(on: s.item, .approve, match: number, now: broker.clock.now)
            #expect(try await broker.submit(client, eventID: s.item.event.ID, decision: approve).status == .ok)
            let reject = try await second.device.decision(on: s.item, .reject, match: nil, now: broker.clock.now)
            let late = try await broker.submit(client, eventID: s.item.event.ID, decision: reject)
            #expect(late.status == .conflict && errorCode(late) == "already_decided")
            #expect(try await broker.poll(client, s.ticket).status == .approved)
        }
    }

    @Test("a decision signed for another event is refused on this one")
    func otherEvent() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let s = try await scene(broker, client)
            let other = try await broker.requestLogin(client)
            let forOther = try await s.alice.device.decision(
                on: s.item, .reject, match: nil, now: broker.clock.now, eventID: other.event.ID)
            let response = try await broker.submit(client, eventID: s.item.event.ID, decision: forOther)
            #expect(response.status == .badRequest && errorCode(response) == "invalid_decision")
            #expect(String(buffer: response.body).contains("wrong_event"))
            try await expectUnchanged(s, client)
        }
    }

    @Test("an approval of other words than the event holds, or of no words, is refused; the true one then stands")
    func otherDisplay() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let s = try await scene(broker, client)
            let number = try #require(s.ticket.matchNumber)
            // A device shown another app name or other details (a forged or
            // stale display) signs what it saw; the broker holds the event's own.
            var forged = s.item
            forged.app = "Your Bank"
            var edited = s.item
            edited.event.details = "Sign in as admin"
            var unnamed = s.item
            unnamed.event.requesterName = nil
            for item in [forged, edited, unnamed] {
                let decision = try await s.alice.device.decision(
                    on: item, .approve, match: number, now: broker.clock.now)
                let response = try await broker.submit(client, eventID: s.item.event.ID, decision: decision)
                #expect(response.status == .badRequest && errorCode(response) == "invalid_decision")
                #expect(String(buffer: response.body).contains("wrong_display"))
            }
            let unsigned = try await DecisionProof.make(
                key: s.alice.device.key, eventID: s.item.event.ID, nonce: s.item.nonce, verdict: .approve,
                match: number, shown: "", broker: TestBroker.origin, now: broker.clock.now)
            let response = try await broker.submit(client, eventID: s.item.event.ID, decision: unsigned)
            #expect(String(buffer: response.body).contains("wrong_display"))
            try await expectUnchanged(s, client)
            let honest = try await s.alice.device.decision(on: s.item, .approve, match: number, now: broker.clock.now)
            #expect(try await broker.submit(client, eventID: s.item.event.ID, decision: honest).status == .ok)
            let decided = try await broker.poll(client, s.ticket)
            #expect(decided.status == .approved)
        }
    }

    @Test("a rejection flipped to an approval under the old signature is refused")
    func flipped() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let s = try await scene(broker, client)
            let reject = try await s.alice.device.decision(on: s.item, .reject, match: nil, now: broker.clock.now)
            let parts = reject.split(separator: ".").map(String.init)
            var claims = try JSONSerialization.jsonObject(with: Base64URL.decode(parts[1])!) as! [String: Any]
            claims["decision"] = "approve"
            claims["match"] = s.ticket.matchNumber
            let flipped = [parts[0], Base64URL.encode(try JSONSerialization.data(withJSONObject: claims)), parts[2]]
                .joined(separator: ".")
            let response = try await broker.submit(client, eventID: s.item.event.ID, decision: flipped)
            #expect(response.status == .badRequest && String(buffer: response.body).contains("bad_signature"))
            try await expectUnchanged(s, client)
        }
    }

    @Test("a device of another user, or of the same user id in another app, is refused")
    func foreignDevices() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let s = try await scene(broker, client)
            let bob = try await broker.enroll(client, user: "bob")
            let bobs = try await bob.device.decision(
                on: s.item, .approve, match: s.ticket.matchNumber, now: broker.clock.now)
            let response = try await broker.submit(client, eventID: s.item.event.ID, decision: bobs)
            #expect(response.status == .forbidden && errorCode(response) == "wrong_user")

            // "alice" of another app is another person.
            let otherApp = try await broker.addAPIKey(name: "other")
            let otherBroker = TestBroker(sharing: broker, apiKeyID: otherApp.id, apiSecret: otherApp.secret)
            let otherAlice = try await otherBroker.enroll(client, user: "alice")
            let theirs = try await otherAlice.device.decision(
                on: s.item, .approve, match: s.ticket.matchNumber, now: broker.clock.now)
            let refused = try await broker.submit(client, eventID: s.item.event.ID, decision: theirs)
            #expect(refused.status == .forbidden && errorCode(refused) == "wrong_user")
            try await expectUnchanged(s, client)
        }
    }

    @Test("a device revoked after the event was created cannot decide it")
    func revoked() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let s = try await scene(broker, client)
            try await client.execute(
                uri: "/api/v1/users/alice/devices/\(s.alice.device.id)", method: .delete,
                headers: broker.backendHeaders
            ) { #expect($0.status == .ok) }
            let approve = try await s.alice.device.decision(
                on: s.item, .approve, match: s.ticket.matchNumber, now: broker.clock.now)
            let response = try await broker.submit(client, eventID: s.item.event.ID, decision: approve)
            #expect(response.status == .forbidden && errorCode(response) == "device_revoked")
            try await client.execute(
                uri: "/api/v1/inbox", method: .get,
                headers: try await s.alice.device.proofHeaders(.get, "/api/v1/inbox", now: broker.clock.now)
            ) { #expect($0.status == .unauthorized && errorCode($0) == "device_revoked") }
            try await expectUnchanged(s, client)
        }
    }

    @Test("an answer after the window is refused by the broker's clock")
    func late() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let s = try await scene(broker, client)
            broker.clock.advance(by: 60)
            let approve = try await s.alice.device.decision(
                on: s.item, .approve, match: s.ticket.matchNumber, now: broker.clock.now)
            let response = try await broker.submit(client, eventID: s.item.event.ID, decision: approve)
            #expect(response.status == .gone && errorCode(response) == "expired")
            #expect(try await broker.poll(client, s.ticket).status == .expired)
        }
    }

    @Test("wrong numbers: refused, counted, and the third rejects the event")
    func wrongMatch() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let s = try await scene(broker, client)
            let wrong = s.ticket.matchNumber == "10" ? "11" : "10"
            let noNumber = try await broker.submit(
                client, eventID: s.item.event.ID,
                decision: try await s.alice.device.decision(on: s.item, .approve, match: nil, now: broker.clock.now))
            #expect(noNumber.status == .badRequest && errorCode(noNumber) == "match_required")
            for attempt in 1...3 {
                let response = try await broker.submit(
                    client, eventID: s.item.event.ID,
                    decision: try await s.alice.device.decision(
                        on: s.item, .approve, match: wrong, now: broker.clock.now))
                #expect(response.status == .unprocessableContent)
                #expect(errorCode(response) == (attempt < 3 ? "wrong_match" : "too_many_wrong_matches"))
                let after = try await broker.poll(client, s.ticket)
                #expect(after.status == (attempt < 3 ? .pending : .rejected))
                #expect(after.statusReason == (attempt < 3 ? nil : .tooManyWrongMatches), "the requester is told why")
            }
            let right = try await broker.submit(
                client, eventID: s.item.event.ID,
                decision: try await s.alice.device.decision(
                    on: s.item, .approve, match: s.ticket.matchNumber, now: broker.clock.now))
            #expect(right.status == .conflict && errorCode(right) == "already_decided")
        }
    }

    @Test("a wrong number sent again is a replay, not a second wrong number; a refused decision's replay too")
    func replayedWrongMatch() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let s = try await scene(broker, client)
            let wrong = s.ticket.matchNumber == "10" ? "11" : "10"
            let decision = try await s.alice.device.decision(on: s.item, .approve, match: wrong, now: broker.clock.now)
            let first = try await broker.submit(client, eventID: s.item.event.ID, decision: decision)
            #expect(first.status == .unprocessableContent && errorCode(first) == "wrong_match")
            for _ in 1...3 {
                let again = try await broker.submit(client, eventID: s.item.event.ID, decision: decision)
                #expect(again.status == .conflict && errorCode(again) == "replayed_decision")
            }
            // Had the replays counted, the event would be rejected by now.
            let event = try await broker.poll(client, s.ticket)
            #expect(event.status == .pending && event.decidedBy == nil)

            let noNumber = try await s.alice.device.decision(on: s.item, .approve, match: nil, now: broker.clock.now)
            let refused = try await broker.submit(client, eventID: s.item.event.ID, decision: noNumber)
            #expect(refused.status == .badRequest && errorCode(refused) == "match_required")
            let replayed = try await broker.submit(client, eventID: s.item.event.ID, decision: noNumber)
            #expect(replayed.status == .conflict && errorCode(replayed) == "replayed_decision")
        }
    }

    @Test("a decision by an unknown key is refused")
    func unknownKey() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let s = try await scene(broker, client)
            let stranger = TestDevice()
            let response = try await broker.submit(
                client, eventID: s.item.event.ID,
                decision: try await stranger.decision(
                    on: s.item, .approve, match: s.ticket.matchNumber, now: broker.clock.now))
            #expect(response.status == .forbidden && errorCode(response) == "unknown_device")
            try await expectUnchanged(s, client)
        }
    }
}
