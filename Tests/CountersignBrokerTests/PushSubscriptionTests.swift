import CountersignBroker
import CountersignCore
import CountersignSQLite
import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// A device's push subscription: who may set it, what is refused (and
/// changes nothing), and what a new request queues.
@Suite("push subscriptions")
struct PushSubscriptionTests {
    static let path = "/api/v1/devices/self/push"

    static func body(
        endpoint: String = "https://8.8.8.8/push/abc", p256dh: String? = nil, auth: String? = nil,
        vapidKeyID: String? = nil
    ) -> ByteBuffer {
        let key = p256dh ?? Base64URL.encode(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
        let secret = auth ?? Base64URL.encode(Data(repeating: 7, count: 16))
        var object: [String: Any] = ["endpoint": endpoint, "keys": ["p256dh": key, "auth": secret]]
        if let vapidKeyID { object["vapid_key_id"] = vapidKeyID }
        return ByteBuffer(bytes: try! JSONSerialization.data(withJSONObject: object))
    }

    static func subscribe(
        _ client: some TestClientProtocol, _ broker: TestBroker, _ device: TestDevice, _ body: ByteBuffer
    ) async throws -> TestResponse {
        try await client.execute(
            uri: path, method: .put, headers: try await device.proofHeaders(.put, path, now: broker.clock.now),
            body: body)
    }

    @Test("the VAPID key is public: its id and the uncompressed point browsers subscribe with")
    func vapidKey() async throws {
        let broker = try await TestBroker(push: PushConfiguration(contact: "mailto:ops@example.com"))
        try await broker.test { client in
            let document = try await client.execute(uri: "/api/v1/push/vapid-key", method: .get) {
                try decode([String: String].self, $0)
            }
            let publicKey = try #require(document["public_key"])
            let point = try #require(Base64URL.decode(publicKey))
            #expect(point.count == 65 && point.first == 0x04)
            #expect(try await broker.store.vapidKeys().map(\.id) == [document["key_id"]])
        }
    }

    @Test("a subscription needs a device proof; a broker without push says so")
    func access() async throws {
        let broker = try await TestBroker(push: PushConfiguration())
        try await broker.test { client in
            let anonymous = try await client.execute(
                uri: Self.path, method: .put, headers: [.contentType: "application/json"], body: Self.body())
            #expect(anonymous.status == .unauthorized)
            let backend = try await client.execute(
                uri: Self.path, method: .put, headers: broker.backendHeaders, body: Self.body())
            #expect(backend.status == .unauthorized, "the app backend cannot set a device's subscription")
        }
        let without = try await TestBroker()
        try await without.test { client in
            let enrolled = try await without.enroll(client)
            let refused = try await Self.subscribe(client, without, enrolled.device, Self.body())
            #expect(refused.status == .serviceUnavailable && errorCode(refused) == "push_disabled")
        }
    }

    @Test(
        "refused, changing nothing: plain http, hosts on loopback or private networks, bad keys, an unknown VAPID key",
        arguments: [
            ("http://8.8.8.8/push", nil, nil, nil, "https"),
            ("https://127.0.0.1/push", nil, nil, nil, "private address"),
            ("https://localhost:8443/push", nil, nil, nil, "private address"),
            ("https://169.254.169.254/latest/meta-data", nil, nil, nil, "private address"),
            ("https://10.1.2.3/push", nil, nil, nil, "private address"),
            ("https://[::1]/push", nil, nil, nil, "private address"),
            ("https://[::ffff:192.168.1.1]/push", nil, nil, nil, "private address"),
            ("https://user:pw@8.8.8.8/push", nil, nil, nil, "user"),
            ("https://8.8.8.8/push#x", nil, nil, nil, "fragment"),
            ("not a url", nil, nil, nil, "absolute URL"),
            ("https://8.8.8.8/push", "BAAA", nil, nil, "p256dh"),
            ("https://8.8.8.8/push", nil, "c2hvcnQ", nil, "auth"),
            ("https://8.8.8.8/push", nil, nil, "no-such-key", "vapid_key_id"),
        ] as [(String, String?, String?, String?, String)])
    func refused(_ endpoint: String, _ p256dh: String?, _ auth: String?, _ vapidKeyID: String?, _ says: String)
        async throws
    {
        let broker = try await TestBroker(push: PushConfiguration())
        try await broker.test { client in
            let enrolled = try await broker.enroll(client)
            let response = try await Self.subscribe(
                client, broker, enrolled.device,
                Self.body(endpoint: endpoint, p256dh: p256dh, auth: auth, vapidKeyID: vapidKeyID))
            #expect(response.status == .badRequest, "\(String(buffer: response.body))")
            #expect(String(buffer: response.body).contains(says), "\(String(buffer: response.body))")
            #expect(try await broker.store.device(id: enrolled.device.id)?.push == nil, "nothing changed")
        }
    }

    @Test("a subscribed device gets one push message per new request, committed with the event; others none")
    func requestQueuesPushes() async throws {
        let broker = try await TestBroker(push: PushConfiguration())
        try await broker.test { client in
            let subscribed = try await broker.enroll(client)
            let plain = try await broker.enroll(client)
            let response = try await Self.subscribe(client, broker, subscribed.device, Self.body())
            #expect(response.status == .ok)
            #expect(try decode(DeviceDocument.self, response).push == true)
            let ticket = try await broker.requestLogin(client)
            let queued = try await broker.store.outboxMessages(state: .queued, limit: 10)
            #expect(queued.map(\.target) == [subscribed.device.id], "none for \(plain.device.id)")
            #expect(queued.first?.eventID == ticket.event.ID)
            #expect(queued.first?.deliverUntil == ticket.event.expiresAt, "never sent after the request ends")
            let payload = try #require(queued.first?.payload)
            let notice = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: String])
            #expect(
                Set(notice.keys) == ["type", "event_id", "app", "title", "expires_at"],
                "the id, the app and a title; no address, requester or number")
            #expect(notice["event_id"] == ticket.event.ID && notice["app"] == "demo")
            #expect(notice["title"] == "Sign-in request" && notice["type"] == "event.pending")

            _ = try await broker.requestLogin(client, user: "bob")
            #expect(try await broker.store.outboxMessages(state: nil, limit: 10).count == 1, "bob has no subscription")
        }
    }

    @Test("removing a device removes its subscription, and later requests push nothing to it")
    func revokedDevice() async throws {
        let broker = try await TestBroker(push: PushConfiguration())
        try await broker.test { client in
            let old = try await broker.enroll(client)
            let new = try await broker.enroll(client)
            #expect(try await Self.subscribe(client, broker, old.device, Self.body()).status == .ok)
            let remove = try await client.execute(
                uri: "/api/v1/devices/\(old.device.id)", method: .delete,
                headers: try await new.device.proofHeaders(
                    .delete, "/api/v1/devices/\(old.device.id)", now: broker.clock.now))
            #expect(remove.status == .ok)
            #expect(try await broker.store.device(id: old.device.id)?.push == nil)
            _ = try await broker.requestLogin(client)
            #expect(try await broker.store.outboxMessages(state: nil, limit: 10).isEmpty)
        }
    }

    @Test("after a VAPID key rotation new subscriptions get the new key; earlier ones keep theirs")
    func rotation() async throws {
        let broker = try await TestBroker(push: PushConfiguration())
        try await broker.test { client in
            let early = try await broker.enroll(client)
            let late = try await broker.enroll(client)
            #expect(try await Self.subscribe(client, broker, early.device, Self.body()).status == .ok)
            let first = try await broker.store.vapidKeys()
            try await broker.store.insertVAPIDKey(VAPIDKeyring.newKey(now: broker.clock.now + 1))
            // Running brokers read their VAPID keys again every 30 s.
            broker.clock.advance(by: 31)
            let published = try await client.execute(uri: "/api/v1/push/vapid-key", method: .get) {
                try decode([String: String].self, $0)
            }
            let newest = try await broker.store.vapidKeys().last
            #expect(published["key_id"] == newest?.id && newest?.id != first.first?.id)
            #expect(try await Self.subscribe(client, broker, late.device, Self.body()).status == .ok)
            #expect(try await broker.store.device(id: late.device.id)?.push?.vapidKeyID == newest?.id)
            #expect(try await broker.store.device(id: early.device.id)?.push?.vapidKeyID == first.first?.id)
        }
    }

    @Test("a device unsubscribes itself")
    func unsubscribe() async throws {
        let broker = try await TestBroker(push: PushConfiguration())
        try await broker.test { client in
            let enrolled = try await broker.enroll(client)
            #expect(try await Self.subscribe(client, broker, enrolled.device, Self.body()).status == .ok)
            let response = try await client.execute(
                uri: Self.path, method: .delete,
                headers: try await enrolled.device.proofHeaders(.delete, Self.path, now: broker.clock.now))
            #expect(try decode(DeviceDocument.self, response).push == false)
            #expect(try await broker.store.device(id: enrolled.device.id)?.push == nil)
        }
    }
}
