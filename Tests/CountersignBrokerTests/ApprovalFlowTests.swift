import CountersignBroker
import CountersignClient
import CountersignCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import JWTKit
import NIOCore
import Testing

@Suite("approval flows over the router")
struct ApprovalFlowTests {
    /// The poll is held up to an hour: that it returns at all shows the
    /// decision woke it (the time limit fails a poll left to its hold),
    /// with no bound on how long a busy machine took to get there.
    @Test(
        "a pending login approved with the right number wakes its long-poll at once", .timeLimit(.minutes(5)))
    func approveWakesRequester() async throws {
        // An hour's window too: a poll not woken would otherwise look again
        // when the window's end is due, a minute in.
        let broker = try await TestBroker(policy: ApprovalPolicy(window: 3600, maxWait: 3600))
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let ticket = try await broker.requestLogin(client)
            #expect(ticket.event.new && !ticket.event.approved && ticket.event.status == .pending)
            #expect(ticket.event.expiresAt == ticket.event.CreatedAt + 3600, "the policy's window")
            let number = try #require(ticket.matchNumber)
            #expect(number.count == 2)

            async let outcome = broker.poll(client, ticket, wait: 3600)
            let items = try await broker.inbox(client, alice.device)
            let item = try #require(items.first { $0.event.ID == ticket.event.ID })
            #expect(item.app == "demo" && item.matchRequired && item.event.requesterName == "new-laptop")
            let response = try await broker.submit(
                client, eventID: item.event.ID,
                decision: try await alice.device.decision(on: item, .approve, match: number, now: broker.clock.now))
            #expect(response.status == .ok)
            let event = try await outcome
            #expect(event.status == .approved && event.approved && !event.new && event.decidedBy == alice.device.id)
            let decision = try #require(event.decision)
            #expect(try CompactJWS.header(of: decision).kid == alice.device.id, "the decision is stored verbatim")

            let verifier = try await BrokerTokenVerifier(
                jwksJSON: String(
                    decoding: try WireCoding.encoder().encode(broker.environment.keys.jwks), as: UTF8.self),
                issuer: TestBroker.origin)
            let claims = try await verifier.verifyEventToken(try #require(event.signature), apiKeyID: broker.apiKeyID)
            #expect(
                claims.jti == event.ID && claims.approved && claims.sub == "alice"
                    && claims.decidedBy == alice.device.id)
        }
    }

    @Test("a rejection settles the event rejected, with a token that says so")
    func reject() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let ticket = try await broker.requestLogin(client)
            let item = try #require(try await broker.inbox(client, alice.device).first)
            #expect(item.event.channel == .api, "a requester's, through the REST API")
            let response = try await broker.submit(
                client, eventID: item.event.ID,
                decision: try await alice.device.decision(on: item, .reject, match: nil, now: broker.clock.now))
            #expect(response.status == .ok)
            let event = try await broker.poll(client, ticket)
            #expect(event.status == .rejected && !event.approved && event.signature != nil)
        }
    }

    @Test("nobody answers: the event expires by the broker's clock")
    func expiry() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            _ = try await broker.enroll(client)
            let ticket = try await broker.requestLogin(client)
            broker.clock.advance(by: 60)
            let event = try await broker.poll(client, ticket, wait: 10)
            #expect(event.status == .expired && !event.new && !event.approved && event.signature == nil)
        }
    }

    @Test("a trusted device's own login is approved at once (seed case 1)")
    func trustedDeviceLogin() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let ticket = try await client.execute(
                uri: "/api/v1/events", method: .post,
                headers: try await alice.device.proofHeaders(.post, "/api/v1/events", now: broker.clock.now),
                body: json(["event": "LOGIN"])
            ) { response in
                #expect(response.status == .created)
                return try decode(EventTicket.self, response)
            }
            #expect(ticket.event.method == .trustedDevice && !ticket.event.new && ticket.event.approved)
            #expect(ticket.requesterToken == nil && ticket.event.signature != nil)
        }
    }

    @Test("the backend reads events and devices, filters by status, and revokes")
    func backend() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let ticket = try await broker.requestLogin(client)
            try await client.execute(
                uri: "/api/v1/events/\(ticket.event.ID)", method: .get, headers: broker.backendHeaders
            ) { #expect($0.status == .ok) }
            struct Events: Decodable { let events: [EventDocument] }
            struct Devices: Decodable { let devices: [DeviceDocument] }
            let pending = try await client.execute(
                uri: "/api/v1/users/alice/events?status=pending", method: .get, headers: broker.backendHeaders
            ) { try decode(Events.self, $0).events }
            #expect(pending.map(\.ID) == [ticket.event.ID])
            let approved = try await client.execute(
                uri: "/api/v1/users/alice/events?status=approved", method: .get, headers: broker.backendHeaders
            ) { try decode(Events.self, $0).events }
            #expect(approved.isEmpty)
            let devices = try await client.execute(
                uri: "/api/v1/users/alice/devices", method: .get, headers: broker.backendHeaders
            ) { try decode(Devices.self, $0).devices }
            #expect(devices.map(\.id) == [alice.device.id] && devices[0].revokedAt == nil)
            let revoked = try await client.execute(
                uri: "/api/v1/users/alice/devices/\(alice.device.id)", method: .delete, headers: broker.backendHeaders
            ) { try decode(DeviceDocument.self, $0) }
            #expect(revoked.revokedAt == broker.clock.now)
        }
    }

    @Test("the JWKS publishes the signing key with its kid")
    func jwks() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            try await client.execute(uri: "/.well-known/jwks.json", method: .get) { response in
                #expect(response.status == .ok)
                let text = String(buffer: response.body)
                #expect(text.contains(broker.environment.keys.currentKeyID) && text.contains("\"ES256\""))
                #expect(!text.contains("\"d\""), "no private key material")
            }
        }
    }
}
