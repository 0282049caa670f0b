import CountersignBroker
import CountersignCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@Suite("a requester withdraws its pending event")
struct WithdrawalTests {
    func withdraw(_ broker: TestBroker, _ client: some TestClientProtocol, _ id: String, headers: HTTPFields)
        async throws -> TestResponse
    {
        try await client.execute(uri: "/api/v1/events/\(id)", method: .delete, headers: headers)
    }

    func bearer(_ ticket: EventTicket) -> HTTPFields { [.authorization: "Bearer \(ticket.requesterToken!)"] }

    /// The poll is held up to an hour, in an hour's window: that it returns
    /// at all shows the withdrawal woke it (the time limit fails one left to
    /// its hold).
    @Test(
        "withdrawn: gone from the inbox, its held poll woken, a decision refused, and said again the same",
        .timeLimit(.minutes(5)))
    func withdraw() async throws {
        let broker = try await TestBroker(policy: ApprovalPolicy(window: 3600, maxWait: 3600))
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let ticket = try await broker.requestLogin(client)
            let item = try #require(try await broker.inbox(client, alice.device).first)
            async let held = broker.poll(client, ticket, wait: 3600)

            let response = try await withdraw(broker, client, ticket.event.ID, headers: bearer(ticket))
            #expect(response.status == .ok, "\(String(buffer: response.body))")
            let withdrawn = try decode(EventDocument.self, response)
            #expect(withdrawn.status == .expired && withdrawn.statusReason == .withdrawn && !withdrawn.new)
            #expect(withdrawn.signature == nil, "no event token: nothing was decided")
            let woken = try await held
            #expect(woken.status == .expired && woken.statusReason == .withdrawn)

            #expect(try await broker.inbox(client, alice.device).isEmpty, "the approver no longer sees it")
            let late = try await broker.submit(
                client, eventID: item.event.ID,
                decision: try await alice.device.decision(
                    on: item, .approve, match: ticket.matchNumber, now: broker.clock.now))
            #expect(late.status == .gone && errorCode(late) == "withdrawn", "\(String(buffer: late.body))")

            let again = try await withdraw(broker, client, ticket.event.ID, headers: bearer(ticket))
            #expect(again.status == .ok)
            #expect(try decode(EventDocument.self, again) == withdrawn)

            // The approver asked for this one event learns how it ended;
            // a device of another user does not learn it exists.
            let path = "/api/v1/inbox/\(ticket.event.ID)"
            let seen = try await client.execute(
                uri: path, method: .get,
                headers: try await alice.device.proofHeaders(.get, path, now: broker.clock.now))
            #expect(seen.status == .ok, "\(String(buffer: seen.body))")
            let read = try decode(EventDocument.self, seen)
            #expect(read.status == .expired && read.statusReason == .withdrawn && read.signature == nil)
            let bob = try await broker.enroll(client, user: "bob")
            let stranger = try await client.execute(
                uri: path, method: .get, headers: try await bob.device.proofHeaders(.get, path, now: broker.clock.now))
            #expect(stranger.status == .notFound)
        }
    }

    @Test("only its requester or its app's backend may withdraw it; anyone else learns nothing and changes nothing")
    func onlyTheRequester() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            _ = try await broker.enroll(client)
            let ticket = try await broker.requestLogin(client)
            let other = try await broker.requestLogin(client)
            let otherApp = try await broker.addAPIKey(name: "other")
            for headers: HTTPFields in [
                bearer(other), [.authorization: "Bearer not-a-token"],
                [HTTPField.Name("API_KEY_ID")!: broker.apiKeyID], TestBroker.backend(otherApp.id, otherApp.secret),
            ] {
                let response = try await withdraw(broker, client, ticket.event.ID, headers: headers)
                #expect(response.status == .notFound || response.status == .unauthorized, "\(headers)")
            }
            let unauthenticated = try await withdraw(broker, client, ticket.event.ID, headers: [:])
            #expect(unauthenticated.status == .unauthorized)
            #expect(try await broker.poll(client, ticket).status == .pending, "still pending")

            let byBackend = try await withdraw(broker, client, other.event.ID, headers: broker.backendHeaders)
            #expect(byBackend.status == .ok)
            #expect(try decode(EventDocument.self, byBackend).statusReason == .withdrawn)
        }
    }

    @Test("a decided event stays decided; an expired one is left as it is")
    func decidedOrExpired() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let ticket = try await broker.requestLogin(client)
            let item = try #require(try await broker.inbox(client, alice.device).first)
            let approved = try await broker.submit(
                client, eventID: item.event.ID,
                decision: try await alice.device.decision(
                    on: item, .approve, match: ticket.matchNumber, now: broker.clock.now))
            #expect(approved.status == .ok)
            let late = try await withdraw(broker, client, ticket.event.ID, headers: bearer(ticket))
            #expect(late.status == .conflict && errorCode(late) == "already_decided")
            #expect(try await broker.poll(client, ticket).status == .approved, "the approval stands")

            let expiring = try await broker.requestLogin(client)
            broker.clock.advance(by: 61)
            let expired = try await withdraw(broker, client, expiring.event.ID, headers: bearer(expiring))
            #expect(expired.status == .gone && errorCode(expired) == "expired")
            #expect(try await broker.poll(client, expiring).statusReason == nil)
        }
    }

    @Test("a withdrawn event no longer counts against the user's pending limit")
    func freesItsPlace() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            _ = try await broker.enroll(client)
            let limit = broker.environment.policy.pendingLimits.perUser
            var tickets: [EventTicket] = []
            for _ in 0..<limit { tickets.append(try await broker.requestLogin(client)) }
            let full = try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.appHeaders,
                body: try json(["client_user_id": "alice"]))
            #expect(full.status == .tooManyRequests)
            #expect(try await withdraw(broker, client, tickets[0].event.ID, headers: bearer(tickets[0])).status == .ok)
            _ = try await broker.requestLogin(client)
        }
    }

    @Test("a code typed for a withdrawn request is refused as withdrawn")
    func codeAfterWithdrawal() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            _ = try await broker.enroll(client)
            let ticket = try await broker.requestLogin(client)
            #expect(try await withdraw(broker, client, ticket.event.ID, headers: bearer(ticket)).status == .ok)
            var headers = bearer(ticket)
            headers[.contentType] = "application/json"
            let response = try await client.execute(
                uri: "/api/v1/events/\(ticket.event.ID)/code", method: .post, headers: headers,
                body: try json(["code": "123456"]))
            #expect(response.status == .gone && errorCode(response) == "withdrawn", "\(String(buffer: response.body))")
        }
    }
}
