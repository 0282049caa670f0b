import CountersignBroker
import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// "This wasn't me": a prompt-bombed user's answer, and what it stops.
@Suite("fraud reports: this wasn't me")
struct FraudReportTests {
    @Test(
        "a report rejects the request and the user's others, refuses requesters 429 user_protected until it ends, and never the backend"
    )
    func protects() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let bomb = try await broker.requestLogin(client)
            let second = try await broker.requestLogin(client)
            _ = try await broker.enroll(client, user: "bob")
            let bobs = try await broker.requestLogin(client, user: "bob")
            let item = try #require(try await broker.inbox(client, alice.device).first { $0.event.ID == bomb.event.ID })
            let report = try await alice.device.decision(on: item, .fraud, match: nil, now: broker.clock.now)
            let reported = try await broker.submit(client, eventID: bomb.event.ID, decision: report)
            #expect(reported.status == .ok, "\(String(buffer: reported.body))")
            let settled = try decode(EventDocument.self, reported)
            #expect(settled.status == .rejected && settled.statusReason == .fraudReported)
            #expect(settled.decidedBy == alice.device.id && settled.decision == report)

            // The requesters see rejections; the other user is untouched.
            let other = try await broker.poll(client, second)
            #expect(other.status == .rejected && other.statusReason == .userProtected && other.decidedBy == nil)
            #expect(try await broker.poll(client, bobs).status == .pending)
            #expect(try await broker.poll(client, bomb).statusReason == .fraudReported)

            // A requester is refused until the protection ends.
            broker.clock.advance(by: 60)
            try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.appHeaders,
                body: json(["client_user_id": "alice", "requester_name": "attacker"])
            ) { response in
                #expect(response.status == .tooManyRequests)
                #expect(errorCode(response) == "user_protected")
                #expect(response.headers[.retryAfter] == String(Int(FraudProtection.defaultDuration) - 60))
            }
            #expect(
                try await broker.store.events(
                    issuer: broker.apiKeyID, clientUserID: "alice", status: .pending, now: broker.clock.now, limit: 10
                ).isEmpty, "nothing was created")
            // The backend asking for a client it relays, under the requester
            // limits, is refused as that requester would be; it must say
            // where the client is; and only the backend may ask so.
            struct Relayed: Encodable {
                let client_user_id: String
                var ip: String? = nil
                let limit_as_requester = true
            }
            try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.backendHeaders,
                body: json(Relayed(client_user_id: "alice", ip: "198.51.100.7"))
            ) { response in
                #expect(response.status == .tooManyRequests, "\(String(buffer: response.body))")
                #expect(errorCode(response) == "user_protected")
            }
            try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.backendHeaders,
                body: json(Relayed(client_user_id: "alice"))
            ) { #expect($0.status == .badRequest, "\(String(buffer: $0.body))") }
            try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.appHeaders,
                body: json(Relayed(client_user_id: "alice"))
            ) { response in
                #expect(response.status == .forbidden)
                #expect(errorCode(response) == "secret_required")
            }
            // A user without devices is still plain to the backend.
            try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.backendHeaders,
                body: json(Relayed(client_user_id: "carol", ip: "198.51.100.7"))
            ) { response in
                #expect(response.status == .conflict)
                #expect(errorCode(response) == "no_trusted_device")
            }
            // The backend, with its secret, still asks.
            try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.backendHeaders,
                body: json(["client_user_id": "alice", "event": "TRANSACTION", "details": "Pay 10 EUR"])
            ) { #expect($0.status == .created, "\(String(buffer: $0.body))") }
            broker.clock.advance(by: FraudProtection.defaultDuration)
            _ = try await broker.requestLogin(client)
        }
    }

    @Test(
        "a backend's relayed requests count as their client's: 3 waiting per user from one address, however it is written; another address has its own share"
    )
    func relayedLimits() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            _ = try await broker.enroll(client)
            struct Relayed: Encodable {
                let client_user_id = "alice"
                let ip: String
                let limit_as_requester = true
            }
            func relay(from ip: String) async throws -> (HTTPResponse.Status, String?) {
                try await client.execute(
                    uri: "/api/v1/events", method: .post, headers: broker.backendHeaders, body: json(Relayed(ip: ip))
                ) { ($0.status, errorCode($0)) }
            }
            for _ in 0..<3 { #expect(try await relay(from: "198.51.100.7").0 == .created) }
            let mapped = try await relay(from: "::ffff:198.51.100.7")
            #expect(mapped.0 == .tooManyRequests && mapped.1 == "too_many_pending", "\(mapped)")
            #expect(try await relay(from: "198.51.100.8").0 == .created, "another address's share")
            // The backend's own requests are counted apart.
            try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.backendHeaders,
                body: json(["client_user_id": "alice", "event": "TRANSACTION", "details": "Pay 10 EUR"])
            ) { #expect($0.status == .created, "\(String(buffer: $0.body))") }
        }
    }

    @Test("the backend lists a user's decisions, with the signed JWS, after the events are gone; another app sees none")
    func decisionsListed() async throws {
        let broker = try await TestBroker()
        let other = try await broker.addAPIKey(name: "other")
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let login = try await broker.requestLogin(client)
            let item = try #require(
                try await broker.inbox(client, alice.device).first { $0.event.ID == login.event.ID })
            let rejection = try await alice.device.decision(on: item, .reject, match: nil, now: broker.clock.now)
            #expect(try await broker.submit(client, eventID: login.event.ID, decision: rejection).status == .ok)
            broker.clock.advance(by: 40 * 86400)
            _ = try await broker.store.garbageCollect(
                now: broker.clock.now, eventsEndedBefore: broker.clock.now - 30 * 86400)
            #expect(try await broker.store.event(id: login.event.ID) == nil, "the event is collected")
            struct Decisions: Decodable { let decisions: [EventDocument] }
            let listed = try await client.execute(
                uri: "/api/v1/users/alice/decisions", method: .get, headers: broker.backendHeaders
            ) { response in
                #expect(response.status == .ok)
                return try decode(Decisions.self, response)
            }
            #expect(listed.decisions.map(\.ID) == [login.event.ID])
            #expect(
                listed.decisions.first?.decision == rejection && listed.decisions.first?.decidedBy == alice.device.id)
            let theirs = try await client.execute(
                uri: "/api/v1/users/alice/decisions", method: .get,
                headers: TestBroker.backend(other.id, other.secret)
            ) { try decode(Decisions.self, $0) }
            #expect(theirs.decisions.isEmpty)
        }
    }

    @Test(
        "a fraud report is a decision like the others: replayed, late, or on another user's event, it changes nothing")
    func refusals() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let bob = try await broker.enroll(client, user: "bob")
            let login = try await broker.requestLogin(client)
            let untouched = try await broker.requestLogin(client)
            let item = try #require(
                try await broker.inbox(client, alice.device).first { $0.event.ID == login.event.ID })
            // Bob signs a report on alice's event: refused, nothing changes.
            let foreign = try await bob.device.decision(on: item, .fraud, match: nil, now: broker.clock.now)
            let refused = try await broker.submit(client, eventID: login.event.ID, decision: foreign)
            #expect(refused.status == .forbidden && errorCode(refused) == "wrong_user")
            #expect(try await broker.poll(client, untouched).status == .pending)

            // Rejected first: a later report is refused and protects nobody.
            let rejection = try await alice.device.decision(on: item, .reject, match: nil, now: broker.clock.now)
            #expect(try await broker.submit(client, eventID: login.event.ID, decision: rejection).status == .ok)
            let late = try await alice.device.decision(on: item, .fraud, match: nil, now: broker.clock.now)
            let answered = try await broker.submit(client, eventID: login.event.ID, decision: late)
            #expect(answered.status == .conflict && errorCode(answered) == "already_decided")
            #expect(try await broker.poll(client, untouched).status == .pending, "no protection from a refused report")
            _ = try await broker.requestLogin(client)

            // The same report twice: the second is a replay.
            let second = try #require(
                try await broker.inbox(client, alice.device).first { $0.event.ID == untouched.event.ID })
            let report = try await alice.device.decision(on: second, .fraud, match: nil, now: broker.clock.now)
            #expect(try await broker.submit(client, eventID: untouched.event.ID, decision: report).status == .ok)
            let replay = try await broker.submit(client, eventID: untouched.event.ID, decision: report)
            #expect(replay.status == .conflict)
        }
    }
}
