import CountersignBroker
import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// Adding a device through an ENROLL_NEW_TRUSTED_DEVICE event approved by a
/// trusted one, and the attacks on it.
@Suite("device lifecycle: pairing a new device")
struct PairingTests {
    /// Asks to pair `newcomer`'s key for alice; `proofKey` signs the proof.
    func requestPairing(
        _ client: some TestClientProtocol, _ broker: TestBroker, newcomer: TestDevice, proofKey: TestDevice? = nil,
        withProof: Bool = true, event: String = EventName.enrollNewTrustedDevice
    ) async throws -> TestResponse {
        var headers = broker.appHeaders
        if withProof {
            let proof = try await DeviceProof.make(
                key: (proofKey ?? newcomer).key, method: "POST", url: TestBroker.origin + "/api/v1/events",
                now: broker.clock.now)
            headers[HTTPField.Name("New-Device-Proof")!] = proof
        }
        let body: [String: AnyEncodable] = [
            "client_user_id": .init("alice"), "event": .init(event), "requester_name": .init("desktop"),
            "new_device": .init(NewDevice(publicKey: newcomer.jwk, name: "desktop", type: "cli")),
        ]
        return try await client.execute(uri: "/api/v1/events", method: .post, headers: headers, body: json(body))
    }

    func pairingDecision(
        _ approver: TestDevice, _ item: InboxItem, _ verdict: Verdict, code: String?, jkt: String?, broker: TestBroker
    ) async throws -> String {
        try await DecisionProof.make(
            key: approver.key, eventID: item.event.ID, nonce: item.nonce, verdict: verdict, match: code,
            shown: ShownRequest(item).digest, broker: TestBroker.origin, now: broker.clock.now, newDevice: jkt)
    }

    @Test("approved: the new key is trusted at once, the requester learns it, the change is recorded")
    func approved() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let approver = try await broker.enroll(client).device
            let newcomer = TestDevice()
            let response = try await requestPairing(client, broker, newcomer: newcomer)
            #expect(response.status == .created, "\(String(buffer: response.body))")
            let ticket = try decode(EventTicket.self, response)
            let code = try #require(ticket.matchNumber)
            #expect(code.count == 6, "a 6-digit pairing code")

            let item = try #require(try await broker.inbox(client, approver).first)
            #expect(item.newDevice?.id == newcomer.id && item.newDevice?.name == "desktop")
            #expect(item.newDevice?.fingerprint == newcomer.jwk.fingerprint)
            #expect(item.matchRequired)

            let decision = try await pairingDecision(
                approver, item, .approve, code: code, jkt: newcomer.id, broker: broker)
            let answer = try await broker.submit(client, eventID: ticket.event.ID, decision: decision)
            #expect(answer.status == .ok, "\(String(buffer: answer.body))")
            #expect(try await broker.poll(client, ticket).status == .approved)
            let added = try #require(try await broker.store.device(id: newcomer.id))
            #expect(added.clientUserID == "alice" && added.revokedAt == nil && added.name == "desktop")
            try await client.execute(
                uri: "/api/v1/devices/self", method: .get,
                headers: try await newcomer.proofHeaders(.get, "/api/v1/devices/self", now: broker.clock.now)
            ) { #expect($0.status == .ok, "the new device is trusted") }
            let log = try await broker.store.deviceChanges(issuer: broker.apiKeyID, clientUserID: "alice", limit: 1)
            #expect(log.first?.deviceID == newcomer.id && log.first?.author.actor == approver.id)
        }
    }

    @Test("an approval bound to another key, or to none, is refused and adds nothing")
    func wrongKey() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let approver = try await broker.enroll(client).device
            let newcomer = TestDevice()
            let ticket = try decode(EventTicket.self, try await requestPairing(client, broker, newcomer: newcomer))
            let item = try #require(try await broker.inbox(client, approver).first)
            for jkt in [TestDevice().id, nil] {
                let decision = try await pairingDecision(
                    approver, item, .approve, code: ticket.matchNumber, jkt: jkt, broker: broker)
                let answer = try await broker.submit(client, eventID: ticket.event.ID, decision: decision)
                #expect(answer.status == .badRequest && String(buffer: answer.body).contains("wrong_key"))
            }
            #expect(try await broker.store.device(id: newcomer.id) == nil)
            #expect(try await broker.poll(client, ticket).status == .pending)
        }
    }

    @Test("refused or expired pairings leave no device")
    func refusedOrExpired() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let approver = try await broker.enroll(client).device
            let refused = TestDevice()
            let ticket = try decode(EventTicket.self, try await requestPairing(client, broker, newcomer: refused))
            let item = try #require(try await broker.inbox(client, approver).first)
            let no = try await pairingDecision(approver, item, .reject, code: nil, jkt: nil, broker: broker)
            #expect(try await broker.submit(client, eventID: ticket.event.ID, decision: no).status == .ok)
            #expect(try await broker.poll(client, ticket).status == .rejected)
            #expect(try await broker.store.device(id: refused.id) == nil)

            let late = TestDevice()
            let lateTicket = try decode(EventTicket.self, try await requestPairing(client, broker, newcomer: late))
            let lateItem = try #require(try await broker.inbox(client, approver).first)
            broker.clock.advance(by: 61)
            let yes = try await pairingDecision(
                approver, lateItem, .approve, code: lateTicket.matchNumber, jkt: late.id, broker: broker)
            #expect(try await broker.submit(client, eventID: lateTicket.event.ID, decision: yes).status == .gone)
            #expect(try await broker.store.device(id: late.id) == nil)
        }
    }

    @Test("no proof, a proof by another key, an enrolled key, or new_device on a LOGIN: refused")
    func badRequests() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let approver = try await broker.enroll(client).device
            let newcomer = TestDevice()
            let noProof = try await requestPairing(client, broker, newcomer: newcomer, withProof: false)
            #expect(noProof.status == .unauthorized)
            let otherKey = try await requestPairing(client, broker, newcomer: newcomer, proofKey: TestDevice())
            #expect(otherKey.status == .unauthorized && errorCode(otherKey) == "invalid_proof")
            let enrolled = try await requestPairing(client, broker, newcomer: approver)
            #expect(enrolled.status == .conflict && errorCode(enrolled) == "device_exists")
            let login = try await requestPairing(client, broker, newcomer: newcomer, event: EventName.login)
            #expect(login.status == .badRequest)
            #expect(try await broker.inbox(client, approver).isEmpty, "no event was created")
        }
    }
}
