import CountersignBroker
import CountersignClient
import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@Suite("approvals by several people (M of N) over the router")
struct QuorumTests {
    /// Creates, as the app's backend, a transaction `requester` asks
    /// `approvers` to approve, `required` of them; returns the response.
    func ask(
        _ broker: TestBroker, _ client: some TestClientProtocol, requester: String = "dave",
        approvers: [String: AnyEncodable]
    ) async throws -> TestResponse {
        let body: [String: AnyEncodable] = [
            "client_user_id": .init(requester), "event": .init("TRANSACTION"), "details": .init("Pay 5,000 EUR"),
            "approvers": .init(approvers),
        ]
        return try await client.execute(
            uri: "/api/v1/events", method: .post, headers: broker.backendHeaders, body: json(body))
    }

    func askTwoOfThree(_ broker: TestBroker, _ client: some TestClientProtocol) async throws -> EventTicket {
        let response = try await ask(
            broker, client,
            approvers: ["users": .init(["alice", "bob", "carol"]), "required_approvals": .init(2)])
        #expect(response.status == .created, "create: \(String(buffer: response.body))")
        return try decode(EventTicket.self, response)
    }

    func answer(
        _ broker: TestBroker, _ client: some TestClientProtocol, _ device: TestDevice, _ ticket: EventTicket,
        _ verdict: Verdict = .approve
    ) async throws -> TestResponse {
        let item = try #require(
            try await broker.inbox(client, device).first { $0.event.ID == ticket.event.ID }, "in the inbox")
        return try await broker.submit(
            client, eventID: item.event.ID,
            decision: try await device.decision(
                on: item, verdict, match: verdict == .approve ? ticket.matchNumber : nil, now: broker.clock.now))
    }

    @Test("2 of 3 approve: counted per person, the requester left out, and the proof checks offline")
    func twoOfThree() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client, user: "alice")
            let alicesPhone = try await broker.enroll(client, user: "alice")
            let bob = try await broker.enroll(client, user: "bob")
            let carol = try await broker.enroll(client, user: "carol")
            let dave = try await broker.enroll(client, user: "dave")
            let ticket = try await askTwoOfThree(broker, client)
            #expect(ticket.event.approvers?.requiredApprovals == 2 && ticket.event.approvals == [])
            #expect(ticket.matchNumber != nil, "each approver types the number the requester shows")
            #expect(try await broker.inbox(client, dave.device).isEmpty, "the requester is not asked")
            #expect(try await broker.inbox(client, carol.device).map(\.event.ID) == [ticket.event.ID])

            let first = try await answer(broker, client, alice.device, ticket)
            #expect(first.status == .ok, "\(String(buffer: first.body))")
            let once = try decode(EventDocument.self, first)
            #expect(once.status == .pending && once.approvals?.map(\.clientUserID) == ["alice"])
            let item = try #require(try await broker.inbox(client, bob.device).first)
            #expect(item.event.approvals?.count == 1, "every approver sees the progress")
            #expect(
                item.event.approvals?.first?.decision == nil,
                "not alice's signed decision: it holds the number the requester shows")
            #expect(once.approvals?.first?.decision == nil, "nor in the answer to a decision")
            let byBackend = try await client.execute(
                uri: "/api/v1/events/\(ticket.event.ID)", method: .get, headers: broker.backendHeaders
            ) { try decode(EventDocument.self, $0) }
            #expect(byBackend.approvals?.first?.decision != nil, "the backend gets it whole")

            let again = try await answer(broker, client, alicesPhone.device, ticket)
            #expect(again.status == .conflict && errorCode(again) == "already_approved", "a person counts once")
            let forged = try await broker.submit(
                client, eventID: ticket.event.ID,
                decision: try await dave.device.decision(
                    on: item, .approve, match: ticket.matchNumber, now: broker.clock.now))
            #expect(forged.status == .forbidden && errorCode(forged) == "not_an_approver", "not the requester")

            let second = try await answer(broker, client, bob.device, ticket)
            #expect(second.status == .ok)
            let event = try await broker.poll(client, ticket)
            #expect(event.status == .approved && event.decidedBy == bob.device.id)
            #expect(event.approvals?.map(\.deviceID) == [alice.device.id, bob.device.id])
            #expect(try await broker.inbox(client, carol.device).isEmpty, "the card ends for everyone")

            let verifier = try await BrokerTokenVerifier(
                jwksJSON: String(
                    decoding: try WireCoding.encoder().encode(broker.environment.keys.jwks), as: UTF8.self),
                issuer: TestBroker.origin)
            let claims = try await verifier.verifyEventToken(try #require(event.signature), apiKeyID: broker.apiKeyID)
            #expect(claims.requiredApprovals == 2 && claims.approvals == event.approvals?.map(\.decision))

            let pinned = [
                "alice": [alice.device.jwk, alicesPhone.device.jwk], "bob": [bob.device.jwk],
                "carol": [carol.device.jwk], "dave": [dave.device.jwk],
            ]
            let counted = try await DecisionProof.checkQuorum(
                storedIn: event, app: "demo", pinnedKeys: pinned, approvers: ["alice", "bob", "carol"],
                requiredApprovals: 2, broker: TestBroker.origin)
            #expect(counted.map(\.clientUserID) == ["alice", "bob"])
            await #expect(throws: ProtocolError(.tooFewApprovals, "")) {
                try await DecisionProof.checkQuorum(
                    storedIn: event, app: "demo", pinnedKeys: pinned, approvers: ["alice", "bob", "carol"],
                    requiredApprovals: 3)
            }
            await #expect(throws: ProtocolError(.tooFewApprovals, ""), "one decision is not a quorum") {
                try await DecisionProof.check(storedIn: event, app: "demo", pinnedKeys: [bob.device.jwk])
            }
        }
    }

    @Test("a look-alike user id (the Kelvin sign for K) neither sees nor approves Karl's request")
    func lookAlike() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            _ = try await broker.enroll(client, user: "Karl")
            _ = try await broker.enroll(client, user: "alice")
            let kelvin = try await broker.enroll(client, user: "\u{212A}arl")
            let response = try await ask(
                broker, client, approvers: ["users": .init(["Karl", "alice"]), "required_approvals": .init(2)])
            let ticket = try decode(EventTicket.self, response)
            #expect(try await broker.inbox(client, kelvin.device).isEmpty)
            let read = try await client.execute(
                uri: "/api/v1/inbox/\(ticket.event.ID)", method: .get,
                headers: try await kelvin.device.proofHeaders(
                    .get, "/api/v1/inbox/\(ticket.event.ID)", now: broker.clock.now))
            #expect(read.status == .notFound)
            let item = InboxItem(
                event: ticket.event, app: "demo",
                nonce: try #require(try await broker.store.event(id: ticket.event.ID)).nonce,
                matchRequired: true)
            let forged = try await broker.submit(
                client, eventID: ticket.event.ID,
                decision: try await kelvin.device.decision(
                    on: item, .approve, match: ticket.matchNumber, now: broker.clock.now))
            #expect(
                forged.status == .forbidden && errorCode(forged) == "not_an_approver", "\(String(buffer: forged.body))")
        }
    }

    @Test("any approver's rejection rejects; an expiry with 1 of 2 stays unapproved")
    func rejectionAndExpiry() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client, user: "alice")
            let bob = try await broker.enroll(client, user: "bob")
            _ = try await broker.enroll(client, user: "carol")
            let rejected = try await askTwoOfThree(broker, client)
            #expect(try await answer(broker, client, alice.device, rejected).status == .ok)
            #expect(try await answer(broker, client, bob.device, rejected, .reject).status == .ok)
            let event = try await broker.poll(client, rejected)
            #expect(event.status == .rejected && event.decidedBy == bob.device.id && event.approvals?.count == 1)

            let expiring = try await askTwoOfThree(broker, client)
            #expect(try await answer(broker, client, alice.device, expiring).status == .ok)
            broker.clock.advance(by: broker.environment.policy.window + 1)
            let expired = try await broker.poll(client, expiring)
            #expect(expired.status == .expired && expired.signature == nil && expired.approvals?.count == 1)
        }
    }

    @Test("an app's approver group: set, replaced, read, deleted, and named by an event's approvers")
    func approverGroups() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client, user: "alice")
            _ = try await broker.enroll(client, user: "bob")
            func put(_ name: String, _ users: [String]) async throws -> TestResponse {
                try await client.execute(
                    uri: "/api/v1/approver-groups/\(name)", method: .put, headers: broker.backendHeaders,
                    body: json(["users": users]))
            }
            #expect(try await put("payments", ["alice", "carol"]).status == .created)
            #expect(try await put("payments", ["alice", "bob"]).status == .ok, "replaced")
            for (name, users, why) in [
                ("payments", [String](), "no users"), ("payments", ["alice", "alice"], "a user twice"),
                ("pay%20ments", ["alice"], "a name with a space"), ("payments", ["a\u{7}b"], "an invalid id"),
            ] {
                let refused = try await put(name, users)
                #expect(refused.status == .badRequest, "\(why): \(String(buffer: refused.body))")
            }
            let listed = try await client.execute(
                uri: "/api/v1/approver-groups", method: .get, headers: broker.backendHeaders)
            #expect(String(buffer: listed.body).contains(#""users":["alice","bob"]"#), "\(String(buffer: listed.body))")
            let other = try await broker.addAPIKey(name: "other")
            let foreign = try await client.execute(
                uri: "/api/v1/approver-groups/payments", method: .get,
                headers: TestBroker.backend(other.id, other.secret))
            #expect(foreign.status == .notFound, "another app does not see it")

            let response = try await ask(
                broker, client, approvers: ["group": .init("payments"), "required_approvals": .init(2)])
            #expect(response.status == .created, "\(String(buffer: response.body))")
            let ticket = try decode(EventTicket.self, response)
            #expect(ticket.event.approvers?.users == ["alice", "bob"] && ticket.event.approvers?.group == "payments")
            #expect(try await broker.inbox(client, alice.device).map(\.event.ID) == [ticket.event.ID])

            let deleted = try await client.execute(
                uri: "/api/v1/approver-groups/payments", method: .delete, headers: broker.backendHeaders)
            #expect(deleted.status == .noContent)
            let again = try await client.execute(
                uri: "/api/v1/approver-groups/payments", method: .delete, headers: broker.backendHeaders)
            #expect(again.status == .notFound)
            let event = try await broker.poll(client, ticket)
            #expect(event.approvers?.users == ["alice", "bob"], "a pending event keeps its approvers")
            let gone = try await ask(
                broker, client, approvers: ["group": .init("payments"), "required_approvals": .init(2)])
            #expect(gone.status == .badRequest, "no such group now")
        }
    }

    @Test("an app's quorum policy: every LOGIN needs 2 of its approvers, whoever asks, until it is deleted")
    func policy() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client, user: "alice")
            _ = try await broker.enroll(client, user: "bob")
            let dave = try await broker.enroll(client, user: "dave")
            func put(_ event: String, _ body: [String: AnyEncodable]) async throws -> TestResponse {
                try await client.execute(
                    uri: "/api/v1/quorum-policies/\(event)", method: .put, headers: broker.backendHeaders,
                    body: json(body))
            }
            for (event, body, why) in [
                (
                    "ENROLL_NEW_TRUSTED_DEVICE", ["users": AnyEncodable(["alice"]), "required_approvals": .init(1)],
                    "pairing"
                ),
                ("LOGIN", ["users": .init(["alice"]), "group": .init("ops"), "required_approvals": .init(1)], "both"),
                ("LOGIN", ["users": .init(["alice"]), "required_approvals": .init(0)], "none required"),
                ("LOGIN", ["users": .init(["alice"]), "required_approvals": .init(2)], "more than listed"),
                ("login", ["users": .init(["alice"]), "required_approvals": .init(1)], "a lower-case name"),
            ] {
                let refused = try await put(event, body)
                #expect(refused.status == .badRequest, "\(why): \(String(buffer: refused.body))")
            }
            let set = try await put("LOGIN", ["users": .init(["alice", "bob"]), "required_approvals": .init(2)])
            #expect(set.status == .created, "\(String(buffer: set.body))")

            // A requester with the key id alone asks for dave's LOGIN: the approvers answer it.
            let ticket = try await broker.requestLogin(client, user: "dave")
            #expect(
                ticket.event.approvers?.users == ["alice", "bob"] && ticket.event.approvers?.requiredApprovals == 2)
            #expect(try await broker.inbox(client, alice.device).map(\.event.ID) == [ticket.event.ID])
            #expect(try await broker.inbox(client, dave.device).isEmpty, "not dave's own device")
            // dave's own device asking for itself waits for them too.
            let own = try await UserVerificationPolicyTests.ownRequest(broker, client, dave.device, ["event": "LOGIN"])
            #expect(own.status == .created)
            #expect(try decode(EventTicket.self, own).event.status == .pending, "not approved at once")
            // The backend cannot name other approvers for LOGIN.
            let other = try await ask(
                broker, client, approvers: ["users": .init(["alice"]), "required_approvals": .init(1)])
            #expect(other.status == .created, "TRANSACTION has no policy")
            let overruled = try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.backendHeaders,
                body: json([
                    "client_user_id": AnyEncodable("dave"), "event": .init("LOGIN"),
                    "approvers": .init(["users": AnyEncodable(["alice"]), "required_approvals": .init(1)]),
                ]))
            #expect(overruled.status == .badRequest, "\(String(buffer: overruled.body))")
            // A policy that cannot be met refuses the event rather than drop the quorum.
            #expect(
                try await put("TRANSACTION", ["users": .init(["dave"]), "required_approvals": .init(1)]).status
                    == .created)
            let unmet = try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.backendHeaders,
                body: json(["client_user_id": "dave", "event": "TRANSACTION", "details": "Pay"]))
            #expect(
                unmet.status == .conflict && errorCode(unmet) == "too_few_approvers", "\(String(buffer: unmet.body))")

            let listed = try await client.execute(
                uri: "/api/v1/quorum-policies", method: .get, headers: broker.backendHeaders)
            #expect(String(buffer: listed.body).contains(#""event":"LOGIN""#))
            let deleted = try await client.execute(
                uri: "/api/v1/quorum-policies/LOGIN", method: .delete, headers: broker.backendHeaders)
            #expect(deleted.status == .noContent)
            let plain = try await broker.requestLogin(client, user: "dave")
            #expect(plain.event.approvers == nil, "dave's own devices again")
        }
    }

    @Test("a quorum that cannot be met, or asked without the secret, is refused and nothing is stored")
    func refusals() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            _ = try await broker.enroll(client, user: "alice")
            _ = try await broker.enroll(client, user: "bob")
            for (approvers, why) in [
                (["users": AnyEncodable(["alice", "bob"]), "required_approvals": .init(3)], "more than listed"),
                (["users": .init(["alice", "alice"]), "required_approvals": .init(1)], "a user twice"),
                (["users": .init(["alice"])], "no required_approvals"),
                (["users": .init(["alice"]), "group": .init("ops"), "required_approvals": .init(1)], "both"),
                (["group": .init("nobody"), "required_approvals": .init(1)], "an unknown group"),
                (["users": .init(["dave", "alice"]), "required_approvals": .init(2)], "the requester counted"),
            ] {
                let response = try await ask(broker, client, approvers: approvers)
                #expect(response.status == .badRequest, "\(why): \(String(buffer: response.body))")
            }
            let unequipped = try await ask(
                broker, client, approvers: ["users": .init(["alice", "carol"]), "required_approvals": .init(2)])
            #expect(unequipped.status == .conflict && errorCode(unequipped) == "too_few_approvers")
            let null = try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.backendHeaders,
                body: ByteBuffer(string: #"{"client_user_id": "dave", "approvers": null}"#))
            #expect(null.status == .badRequest, "a null quorum is no quorum: \(String(buffer: null.body))")
            let requester = try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.appHeaders,
                body: json([
                    "client_user_id": AnyEncodable("dave"),
                    "approvers": .init(["users": AnyEncodable(["alice"]), "required_approvals": .init(1)]),
                ]))
            #expect(requester.status == .forbidden && errorCode(requester) == "secret_required")
            let events = try await broker.store.events(
                issuer: broker.apiKeyID, clientUserID: "dave", status: nil, now: broker.clock.now, limit: 10)
            #expect(events.isEmpty, "nothing stored")
        }
    }
}
