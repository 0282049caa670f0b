import AsyncHTTPClient
import CountersignClient
import CountersignCore
import CountersignPostgresTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Webhooks from real brokers to scripts/webhook-receiver.py, which checks
/// every message with Python's `standardwebhooks` package.
@Suite("end to end: webhooks to an independent receiver")
struct WebhookEndToEndTests {
    struct Endpoint: Decodable {
        let id: String
        let secret: String?
    }

    /// `device-broker webhook ARGUMENTS --json` on the broker's store.
    static func webhook(_ broker: LiveBroker, _ arguments: [String]) async throws -> Endpoint {
        let command = try RunningProcess(
            "device-broker", ["webhook"] + arguments + ["--json"] + broker.storeArguments)
        guard try await command.exitCode(timeout: .seconds(120)) == 0 else {
            throw ProcessFailure("webhook \(arguments) failed: \(command.text)")
        }
        return try JSONDecoder().decode(Endpoint.self, from: command.json)
    }

    /// A broker, a receiver, and an endpoint of the broker's API key at it
    /// (for `types`, all if none) whose secret the receiver checks with;
    /// with `device`, alice has a trusted device (enrolled before the
    /// endpoint was set, so nothing is sent of it).
    static func setUp(types: [String] = [], device: Bool = true, arguments: [String] = []) async throws -> (
        LiveBroker, WebhookReceiverProcess, Endpoint
    ) {
        let broker = try await LiveBroker.start(arguments: arguments)
        if device { _ = try await broker.enrollDevice() }
        let receiver = try await WebhookReceiverProcess.start()
        let endpoint = try await webhook(
            broker, ["set", broker.apiKeyID, receiver.endpoint("app")] + types.flatMap { ["--type", $0] })
        try await receiver.configure("app", secrets: [try #require(endpoint.secret)])
        return (broker, receiver, endpoint)
    }

    @Test(
        "each kind of change arrives once, signed, as the receiver's standardwebhooks checks it; a forgery is refused")
    func eachType() async throws {
        let (broker, receiver, _) = try await Self.setUp(device: false)
        defer {
            broker.stop()
            receiver.stop()
        }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let (login, loginID, number) = try await broker.startLogin(
            machine: try temporaryDirectory("machine-B").appendingPathComponent("countersign"))
        let approve = try broker.agent(
            ["approve", "--event", loginID, "--yes", "--match", number], configDirectory: laptop)
        #expect(try await approve.exitCode() == 0, "\(approve.text)")
        #expect(try await login.exitCode() == 0, "\(login.text)")
        let payment = try await broker.backend.requestApproval(user: "alice", details: "Pay 10 EUR")
        let reject = try broker.agent(["approve", "--event", payment.event.ID, "--reject"], configDirectory: laptop)
        #expect(try await reject.exitCode() == 0, "\(reject.text)")
        let device = try #require(try await broker.backend.devices(user: "alice").first { $0.name == "laptop" })
        _ = try await broker.backend.revokeDevice(user: "alice", deviceID: device.id)

        let expected = [
            "device.enrolled", "event.created", "event.approved", "event.created", "event.rejected", "device.removed",
        ]
        let received = try await receiver.waitUntil("every change") { $0.count >= expected.count }
        // Sent side by side: in any order (each says when it happened).
        #expect(received.map { $0.body?.type ?? "?" }.sorted() == expected.sorted())
        #expect(received.allSatisfy { $0.verified && $0.refused == nil && $0.answered == 204 }, "all verified")
        #expect(Set(received.compactMap(\.id)).count == expected.count, "a webhook-id each")
        #expect(received.allSatisfy { $0.id?.hasPrefix("msg_") == true && $0.signature?.hasPrefix("v1,") == true })
        let approved = try #require(received.first { $0.body?.type == "event.approved" }?.body?.data)
        #expect(approved.ID == loginID && approved.status == "approved" && approved.client_user_id == "alice")
        #expect(approved.signature == nil, "no broker-signed token in a webhook: fetch the event for it")
        #expect(received.first { $0.body?.type == "event.rejected" }?.body?.data.ID == payment.event.ID)
        #expect(received.first { $0.body?.type == "device.removed" }?.body?.data.device_id == device.id)
        // The enrollment carries the key, to pin: its thumbprint is the device id.
        let enrolled = try #require(received.first { $0.body?.type == "device.enrolled" }?.body?.data)
        #expect(enrolled.device_id == device.id && enrolled.public_key?.thumbprint == device.id)
        #expect(received.first { $0.body?.type == "device.removed" }?.body?.data.public_key == nil)
        // Nothing more comes: each message was delivered once.
        try await Task.sleep(for: .seconds(2))
        #expect(try await receiver.received().count == expected.count)

        // The receiver's check holds: the same headers on another body, or
        // on a later timestamp, are refused.
        let original = try #require(received.first { $0.body?.type == "event.approved" })
        for (body, timestamp) in [
            (original.raw.replacingOccurrences(of: "approved", with: "rejected"), original.timestamp!),
            (original.raw, original.timestamp! + 60),
        ] {
            var request = HTTPClientRequest(url: receiver.endpoint("app"))
            request.method = .POST
            request.headers.add(name: "webhook-id", value: original.id!)
            request.headers.add(name: "webhook-timestamp", value: String(timestamp))
            request.headers.add(name: "webhook-signature", value: original.signature!)
            request.body = .bytes(ByteBuffer(string: body))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            #expect(response.status == .badRequest, "a forged message is refused")
        }
    }

    @Test("a request nobody answers in time is announced as expired, once, by the broker's clock")
    func expired() async throws {
        let (broker, receiver, _) = try await Self.setUp(
            types: ["event.expired"], arguments: ["--approval-window", "2s"])
        defer {
            broker.stop()
            receiver.stop()
        }
        let event = try await broker.backend.requestApproval(user: "alice", numberMatching: false)
        let received = try await receiver.waitUntil("the expiry") { !$0.isEmpty }
        #expect(received.first?.body?.type == "event.expired" && received.first?.verified == true)
        #expect(received.first?.body?.data.ID == event.event.ID && received.first?.body?.data.status == "expired")
        try await Task.sleep(for: .seconds(3))
        #expect(try await receiver.received().count == 1, "announced once")
    }

    @Test("a broker on a public URL sends nothing to an endpoint on loopback: the message fails, saying why")
    func privateEndpointRefused() async throws {
        let (broker, receiver, endpoint) = try await Self.setUp(
            types: ["event.created"],
            arguments: ["--public-url", "https://auth.example.com", "--public-url", "http://127.0.0.1:{port}"])
        defer {
            broker.stop()
            receiver.stop()
        }
        _ = try await broker.backend.requestApproval(user: "alice", numberMatching: false)
        let deadline = ContinuousClock.now + .seconds(90)
        var failed = ""
        while ContinuousClock.now < deadline, failed.isEmpty {
            let messages = try RunningProcess(
                "device-broker", ["webhook", "messages", broker.apiKeyID, "--state", "failed"] + broker.storeArguments)
            #expect(try await messages.exitCode() == 0)
            failed = messages.text
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(failed.contains("\(endpoint.id)\tevent.created\tfailed\t1\t"), "failed at once: \(failed)")
        #expect(failed.contains("is a private address") && failed.contains("--allow-private-webhook-endpoints"))
        #expect(try await receiver.received().isEmpty, "nothing reached the receiver")
    }

    @Test("a receiver that fails gets the message again, same webhook-id, once it answers; the broker's list says so")
    func retriedUntilTaken() async throws {
        let (broker, receiver, endpoint) = try await Self.setUp(types: ["event.created"])
        defer {
            broker.stop()
            receiver.stop()
        }
        try await receiver.answer("app", with: 503)
        let event = try await broker.backend.requestApproval(user: "alice", numberMatching: false)
        let failed = try await receiver.waitUntil("a refused attempt") { $0.contains { $0.answered == 503 } }
        let id = try #require(failed.first?.id)
        // The broker records the failure once the answer is in.
        let deadline = ContinuousClock.now + .seconds(60)
        var listed = ""
        while ContinuousClock.now < deadline, !listed.contains("failing since") {
            let listing = try RunningProcess(
                "device-broker", ["webhook", "list", broker.apiKeyID] + broker.storeArguments)
            #expect(try await listing.exitCode() == 0)
            listed = listing.text
        }
        #expect(listed.hasPrefix("\(endpoint.id)\t") && listed.contains("failing since"), "\(listed)")
        try await receiver.answer("app", with: 204)
        let taken = try await receiver.waitUntil("the message taken") { $0.contains { $0.answered == 204 } }
        #expect(taken.filter { $0.answered == 204 }.map(\.id) == [id], "the same message, delivered once")
        #expect(taken.allSatisfy { $0.verified && $0.body?.data.ID == event.event.ID })
        let messages = try RunningProcess(
            "device-broker", ["webhook", "messages", broker.apiKeyID, "--state", "delivered"] + broker.storeArguments)
        #expect(try await messages.exitCode() == 0)
        #expect(messages.text.contains("\(id)\t\(endpoint.id)\tevent.created\tdelivered\t"), "\(messages.text)")
    }

    @Test("`apikey set-webhook`, the old name of `webhook set`, still sets an endpoint, says so, and is not listed")
    func deprecatedName() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let old = try RunningProcess(
            "device-broker",
            ["apikey", "set-webhook", broker.apiKeyID, "http://127.0.0.1:9/old"] + broker.storeArguments)
        #expect(try await old.exitCode(timeout: .seconds(120)) == 0, "\(old.text)")
        #expect(old.text.contains("deprecated; it is `device-broker webhook set`"), "\(old.text)")
        let listing = try RunningProcess("device-broker", ["webhook", "list", broker.apiKeyID] + broker.storeArguments)
        #expect(try await listing.exitCode(timeout: .seconds(120)) == 0)
        #expect(listing.text.contains("\thttp://127.0.0.1:9/old\t"), "\(listing.text)")
        let help = try RunningProcess("device-broker", ["apikey", "--help"])
        #expect(try await help.exitCode(timeout: .seconds(120)) == 0)
        #expect(help.text.contains("set-redirect-urls") && !help.text.contains("set-webhook"), "\(help.text)")
    }

    @Test("a broker killed while a message is on its way sends it after the restart, with the same webhook-id")
    func survivesKill() async throws {
        var (broker, receiver, _) = try await Self.setUp(types: ["event.created"])
        defer {
            broker.stop()
            receiver.stop()
        }
        // The receiver takes the message and never answers: the broker is
        // killed with the attempt unfinished, after the change committed.
        try await receiver.answer("app", with: 0)
        let event = try await broker.backend.requestApproval(user: "alice", numberMatching: false)
        let hanging = try await receiver.waitUntil("the attempt under way") { !$0.isEmpty }
        broker = try await broker.killAndRestart()
        try await receiver.answer("app", with: 204)
        let taken = try await receiver.waitUntil("the message after the restart") {
            $0.contains { $0.answered == 204 }
        }
        #expect(taken.first { $0.answered == 204 }?.id == hanging.first?.id, "the same webhook-id")
        #expect(taken.first { $0.answered == 204 }?.body?.data.ID == event.event.ID)
    }

    @Test("an endpoint that never answers, with a backlog, takes a few of the delivery slots, not all of them")
    func neverAnsweringEndpointShares() async throws {
        let (broker, receiver, hanging) = try await Self.setUp(
            types: ["event.created"], arguments: ["--max-pending", "300"])
        defer {
            broker.stop()
            receiver.stop()
        }
        // A backlog of 240 messages for an endpoint that takes each and
        // never answers (each attempt ends at the client's read timeout),
        // far more than the 64 attempts an instance makes at once.
        try await receiver.answer("app", with: 0)
        for _ in 0..<240 { _ = try await broker.backend.requestApproval(user: "alice", numberMatching: false) }
        // Then a second endpoint, which answers, and one change for it. It
        // is named by another host name (the same receiver process, another
        // origin), as a second server's endpoint would be: the outbox shares
        // by origin, and the HTTP client keeps 8 connections per host.
        let second = try await Self.webhook(
            broker,
            [
                "set", broker.apiKeyID,
                receiver.endpoint("second").replacingOccurrences(of: "127.0.0.1", with: "localhost"),
                "--type", "event.created",
            ])
        try await receiver.configure("second", secrets: [try #require(second.secret)])
        let event = try await broker.backend.requestApproval(user: "alice", numberMatching: false)
        _ = try await receiver.waitUntil("the second endpoint's message", name: "second") {
            $0.contains { $0.body?.data.ID == event.event.ID && $0.answered == 204 }
        }
        // It went out before the hanging endpoint's backlog. Claimed oldest
        // first with no share per receiver, it would have waited until
        // every older message had been claimed once: no more than the 64
        // in flight could then be still unattempted.
        let listing = try RunningProcess(
            "device-broker", ["webhook", "messages", broker.apiKeyID, "--limit", "1000"] + broker.storeArguments)
        #expect(try await listing.exitCode() == 0)
        let rows = listing.text.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        let waiting = rows.filter { row in
            row.count > 4 && row[1] == hanging.id && row[3] == "queued" && row[4] == "0"
        }
        #expect(waiting.count > 64, "\(waiting.count) of the hanging endpoint's messages not yet attempted")
    }

    @Test("a rotated secret: messages carry both signatures during the overlap, then the new one only")
    func secretRotation() async throws {
        let (broker, receiver, endpoint) = try await Self.setUp(types: ["event.created"])
        defer {
            broker.stop()
            receiver.stop()
        }
        let old = try #require(endpoint.secret)
        let rotated = try await Self.webhook(broker, ["rotate-secret", endpoint.id, "--overlap", "1h"])
        let new = try #require(rotated.secret)
        #expect(new != old && new.hasPrefix("whsec_"))
        // A receiver still on the old secret, and one already on the new.
        try await receiver.configure("app", secrets: [old])
        _ = try await broker.backend.requestApproval(user: "alice", numberMatching: false)
        let first = try await receiver.waitUntil("a message during the overlap") { $0.count >= 1 }
        #expect(first[0].verified, "the old secret still verifies: \(first[0].refused ?? "")")
        #expect(first[0].signature?.split(separator: " ").count == 2, "two signatures")
        try await receiver.configure("app", secrets: [new])
        _ = try await broker.backend.requestApproval(user: "alice", numberMatching: false)
        let second = try await receiver.waitUntil("a message to the new secret") { $0.count >= 2 }
        #expect(second[1].verified, "\(second[1].refused ?? "")")

        // Rotated with no overlap: a receiver on the old secret refuses.
        let last = try await Self.webhook(broker, ["rotate-secret", endpoint.id, "--overlap", "0"])
        try await receiver.configure("app", secrets: [new])
        _ = try await broker.backend.requestApproval(user: "alice", numberMatching: false)
        let third = try await receiver.waitUntil("a message after the overlap") { $0.count >= 3 }
        #expect(!third[2].verified && third[2].answered == 400, "only the newest secret signs")
        #expect(third[2].signature?.split(separator: " ").count == 1)
        try await receiver.configure("app", secrets: [try #require(last.secret)])
        let retried = try await receiver.waitUntil("the refused message retried") {
            $0.contains { $0.verified && $0.id == third[2].id }
        }
        #expect(retried.last?.answered == 204)
    }

    @Test("two instances on PostgreSQL: 200 changes, each message delivered once, whichever instance made it")
    func twoInstancesDeliverOnce() async throws {
        let database = try await TestPostgres.createDatabase()
        let arguments = ["--max-pending", "250", "--approval-window", "5m"]
        let a = try await LiveBroker.start(arguments: arguments, database: database)
        let b = try await a.startInstance(arguments: arguments)
        let receiver = try await WebhookReceiverProcess.start()
        _ = try await a.enrollDevice()
        let endpoint = try await Self.webhook(
            a, ["set", a.apiKeyID, receiver.endpoint("app"), "--type", "event.created"])
        try await receiver.configure("app", secrets: [try #require(endpoint.secret)])
        var ids: [String] = []
        for index in 0..<200 {
            let broker = index % 2 == 0 ? a : b
            ids.append(try await broker.backend.requestApproval(user: "alice", numberMatching: false).event.ID)
        }
        let received = try await receiver.waitUntil("200 messages", timeout: .seconds(180)) { $0.count >= 200 }
        // Given time for a second send of any of them to show.
        try await Task.sleep(for: .seconds(3))
        let all = try await receiver.received()
        receiver.stop()
        a.stop()
        b.stop()
        try await TestPostgres.dropDatabase(database)
        #expect(all.count == 200, "each message once, not \(all.count) in all")
        #expect(all.allSatisfy { $0.verified && $0.answered == 204 })
        #expect(Set(all.compactMap(\.id)).count == 200, "200 webhook-ids")
        #expect(Set(received.compactMap { $0.body?.data.ID }) == Set(ids), "one per event")
    }

    @Test("webhook set refuses a URL that is not https (or http to loopback), and an unknown API key or type")
    func setRefusals() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        for (arguments, error) in [
            (["set", broker.apiKeyID, "http://hooks.example/x"], "must be https"),
            (["set", broker.apiKeyID, "https://user:pw@hooks.example/x"], "user name or password"),
            (["set", "ck_nobody", "https://hooks.example/x"], "no API key ck_nobody"),
            (["set", broker.apiKeyID, "https://hooks.example/x", "--type", "event.nope"], "unknown --type"),
            (["rotate-secret", "wh_nobody"], "no webhook endpoint wh_nobody"),
            (["resend", "msg_nobody"], "no webhook message msg_nobody"),
        ] {
            let command = try RunningProcess("device-broker", ["webhook"] + arguments + broker.storeArguments)
            #expect(try await command.exitCode() == 64, "\(arguments): \(command.text)")
            #expect(command.text.contains(error), "\(arguments): \(command.text)")
        }
        let list = try RunningProcess("device-broker", ["webhook", "list", broker.apiKeyID] + broker.storeArguments)
        #expect(try await list.exitCode() == 0)
        #expect(list.text.isEmpty, "nothing was added: \(list.text)")
    }
}
