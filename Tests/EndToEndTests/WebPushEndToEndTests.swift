import AsyncHTTPClient
import CountersignClient
import CountersignCore
import CountersignPostgresTesting
import Foundation
import NIOCore
import Testing

/// Web Push from real brokers to scripts/push-service.py, which checks
/// each push with Python's py_vapid and decrypts it with http_ece.
@Suite("end to end: Web Push to an independent push service")
struct WebPushEndToEndTests {
    /// The push service runs on loopback, so the broker must be allowed to
    /// push there; a long window leaves room for retries on a busy machine.
    static let brokerArguments = [
        "--allow-private-push-endpoints", "--push-contact", "mailto:ops@example.com", "--approval-window", "5m",
    ]

    /// What the broker's metrics say of Web Push messages with `outcome`.
    static func outboxCount(_ broker: LiveBroker, _ outcome: String) async throws -> Int {
        let response = try await HTTPClient.shared.get(url: broker.url + "/metrics").get()
        let text = String(buffer: response.body ?? ByteBuffer())
        let pattern = try Regex(
            #"countersign_outbox_messages_total\{kind="web_push",outcome="\#(outcome)"\} (\d+)"#)
        return text.firstMatch(of: pattern).flatMap { Int($0.output[1].substring ?? "") } ?? 0
    }

    static func waitForCount(_ broker: LiveBroker, _ outcome: String, atLeast count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(90)
        while ContinuousClock.now < deadline {
            if try await outboxCount(broker, outcome) >= count { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        let metrics = try await HTTPClient.shared.get(url: broker.url + "/metrics").get()
        let outbox = String(buffer: metrics.body ?? ByteBuffer()).split(separator: "\n").filter {
            $0.hasPrefix("countersign_outbox")
        }
        throw ProcessFailure(
            "the broker never counted \(count) \(outcome) push message(s); its metrics:\n"
                + outbox.joined(separator: "\n") + "\nit said:\n\(broker.process.text.suffix(6000))")
    }

    @Test("a new request reaches the subscribed device by push: encrypted, VAPID-signed, and none of its details")
    func pushArrives() async throws {
        let broker = try await LiveBroker.start(arguments: Self.brokerArguments)
        defer { broker.stop() }
        let push = try await PushServiceProcess.start(broker: broker.url)
        defer { push.stop() }
        let approver = try await broker.enrollMachine(name: "laptop")
        let other = try await broker.enrollMachine(name: "desktop")
        let subscription = try await push.subscribe()
        let subscribe = try broker.agent(
            [
                // The = form: a base64url secret may begin with "-", which would read as an option.
                "push", "subscribe", "--endpoint=\(subscription.endpoint)", "--p256dh=\(subscription.p256dh)",
                "--auth=\(subscription.auth)",
            ], configDirectory: approver)
        #expect(try await subscribe.exitCode() == 0, "\(subscribe.text)")
        let listing = try broker.agent(["devices"], configDirectory: other)
        #expect(try await listing.exitCode() == 0)
        #expect(listing.text.contains("gets requests by push"), "the device list says which device gets pushes")

        let requester = try temporaryDirectory("requester").appendingPathComponent("countersign")
        let (login, eventID, _) = try await broker.startLogin(machine: requester, name: "machine-B")
        defer { login.stop() }
        let received = try await push.waitUntil("the push for \(eventID)") {
            $0.contains { $0.payload?.event_id == eventID }
        }
        let arrived = try #require(received.first { $0.payload?.event_id == eventID })
        #expect(arrived.refused == nil && arrived.status == 201)
        #expect(arrived.vapid?.aud == push.url, "VAPID audience is the push service's origin")
        #expect(arrived.vapid?.sub == "mailto:ops@example.com")
        #expect(arrived.urgency == "high")
        let ttl = try #require(arrived.ttl.flatMap(Int.init))
        #expect(ttl > 0 && ttl <= 300, "kept no longer than the request waits")
        #expect(arrived.payload?.app == "demo")
        #expect(arrived.payload?.title == "Sign-in request")
        // Only the id, the app, a title and the expiry: no requester name, address or number.
        let plaintext = try await push.rawPayloads()
        #expect(plaintext.count == 1 && Set(plaintext[0].keys) == ["type", "event_id", "app", "title", "expires_at"])
        #expect(!plaintext[0].values.contains { $0.contains("machine-B") || $0.contains("127.0.0.1") })
        #expect(received.count == 1, "one push: only the subscribed device gets one")
    }

    @Test("with the push service down, events are still created at once; the push arrives when it is back")
    func pushServiceDown() async throws {
        let broker = try await LiveBroker.start(arguments: Self.brokerArguments)
        defer { broker.stop() }
        var push = try await PushServiceProcess.start(broker: broker.url)
        let device = try await broker.enrollDevice()
        let subscription = try await push.subscribe()
        _ = try await CountersignClient(for: device).subscribePush(
            PushEndpoint(endpoint: subscription.endpoint, p256dh: subscription.p256dh, auth: subscription.auth),
            credential: device)
        push.stop()
        let ticket = try await broker.backend.requestApproval(user: "alice", details: "Pay 10 EUR")
        #expect(ticket.event.status == .pending, "created while nothing can be pushed")
        try await Self.waitForCount(broker, "retried", atLeast: 1)
        push = try await push.restarted()
        defer { push.stop() }
        let received = try await push.waitUntil("the push after the outage") {
            $0.contains { $0.payload?.event_id == ticket.event.ID }
        }
        #expect(received.filter { $0.payload?.event_id == ticket.event.ID }.count == 1)
        #expect(received.allSatisfy { $0.refused == nil })
    }

    /// This broker's `countersign_outbox_attempts_in_flight` of `kind`.
    static func attemptsInFlight(_ broker: LiveBroker, _ kind: String) async throws -> Int {
        let pattern = try Regex(#"countersign_outbox_attempts_in_flight\{kind="\#(kind)"\} ([0-9.]+)"#)
        let text = try await broker.metricsText()
        guard let value = text.firstMatch(of: pattern).flatMap({ Double($0.output[1].substring ?? "") }) else {
            throw ProcessFailure("no attempts-in-flight gauge for \(kind) in the metrics:\n\(text)")
        }
        return Int(value)
    }

    /// Subscribes `device` at `service`, which answers its pushes with
    /// `status` (0: takes each and never answers).
    static func subscribe(_ device: DeviceCredential, at service: PushServiceProcess, answering status: Int? = nil)
        async throws
    {
        let subscription = try await service.subscribe()
        if let status { try await service.answer(subscription, with: status) }
        _ = try await CountersignClient(for: device).subscribePush(
            PushEndpoint(endpoint: subscription.endpoint, p256dh: subscription.p256dh, auth: subscription.auth),
            credential: device)
    }

    @Test("a push service that never answers holds 8 attempts, however many of its devices have pushes queued")
    func hangingPushServiceShares() async throws {
        let broker = try await LiveBroker.start(arguments: Self.brokerArguments + ["--max-pending", "20"])
        defer { broker.stop() }
        let hanging = try await PushServiceProcess.start(broker: broker.url)
        defer { hanging.stop() }
        let answering = try await PushServiceProcess.start(broker: broker.url)
        defer { answering.stop() }
        // Twelve of alice's devices subscribed at a push service that takes
        // each push and never answers; six requests queue 72 pushes there,
        // more than the 64 attempts an instance makes at once. Shared per
        // device (8 each), they would all be under way at once.
        for index in 0..<12 {
            try await Self.subscribe(
                try await broker.enrollDevice(name: "phone-\(index)"), at: hanging, answering: 0)
        }
        for _ in 0..<6 { _ = try await broker.backend.requestApproval(user: "alice", numberMatching: false) }
        _ = try await hanging.waitUntil("the first pushes, never answered") { $0.count >= 8 }
        let inFlight = try await Self.attemptsInFlight(broker, "web_push")
        #expect((1...8).contains(inFlight), "the push service's share, no more: \(inFlight)")
        // Bob's device, at another push service, gets its push while the
        // first one's attempts hang (each for up to 12 s).
        try await Self.subscribe(try await broker.enrollDevice(user: "bob", name: "phone"), at: answering)
        let ticket = try await broker.backend.requestApproval(user: "bob", numberMatching: false)
        _ = try await answering.waitUntil("bob's push") { $0.contains { $0.payload?.event_id == ticket.event.ID } }
        #expect(try await Self.attemptsInFlight(broker, "web_push") <= 8)
    }

    @Test("a push not sent before the request is decided is cancelled, never sent late")
    func cancelledOnceDecided() async throws {
        let broker = try await LiveBroker.start(arguments: Self.brokerArguments)
        defer { broker.stop() }
        var push = try await PushServiceProcess.start(broker: broker.url)
        let device = try await broker.enrollDevice()
        let client = CountersignClient(for: device)
        let subscription = try await push.subscribe()
        _ = try await client.subscribePush(
            PushEndpoint(endpoint: subscription.endpoint, p256dh: subscription.p256dh, auth: subscription.auth),
            credential: device)
        push.stop()
        let ticket = try await broker.backend.requestApproval(user: "alice", numberMatching: false)
        try await Self.waitForCount(broker, "retried", atLeast: 1)
        let item = try #require(try await client.inbox(device, wait: 0).first { $0.event.ID == ticket.event.ID })
        _ = try await client.decide(item, verdict: .reject, match: nil, credential: device)
        // Still down: an attempt that began before the decision fails too,
        // and the next one, after it, is cancelled.
        try await Self.waitForCount(broker, "cancelled", atLeast: 1)
        push = try await push.restarted()
        defer { push.stop() }
        try await Task.sleep(for: .seconds(2))
        #expect(try await push.received().isEmpty, "nothing reached the push service")
        #expect(try await Self.outboxCount(broker, "delivered") == 0)
    }

    @Test("a push service's 410 removes the subscription: later requests queue no push for that device")
    func goneRemovesSubscription() async throws {
        let broker = try await LiveBroker.start(arguments: Self.brokerArguments)
        defer { broker.stop() }
        let push = try await PushServiceProcess.start(broker: broker.url)
        defer { push.stop() }
        let device = try await broker.enrollDevice()
        let client = CountersignClient(for: device)
        let subscription = try await push.subscribe()
        _ = try await client.subscribePush(
            PushEndpoint(endpoint: subscription.endpoint, p256dh: subscription.p256dh, auth: subscription.auth),
            credential: device)
        #expect(try await client.whoAmI(device).push == true)
        try await push.answer(subscription, with: 410)
        _ = try await broker.backend.requestApproval(user: "alice")
        try await Self.waitForCount(broker, "cancelled", atLeast: 1)
        #expect(try await client.whoAmI(device).push == false, "the subscription is gone")
        _ = try await broker.backend.requestApproval(user: "alice")
        #expect(try await Self.outboxCount(broker, "queued") == 1, "the second request queued no push")
        #expect(try await push.received().map(\.status) == [410])
    }

    @Test("a broker killed with SIGKILL after the commit still sends the push after its restart")
    func survivesKill() async throws {
        var broker = try await LiveBroker.start(arguments: Self.brokerArguments)
        var push = try await PushServiceProcess.start(broker: broker.url)
        let device = try await broker.enrollDevice()
        let subscription = try await push.subscribe()
        _ = try await CountersignClient(for: device).subscribePush(
            PushEndpoint(endpoint: subscription.endpoint, p256dh: subscription.p256dh, auth: subscription.auth),
            credential: device)
        push.stop()
        let ticket = try await broker.backend.requestApproval(user: "alice")
        // Committed and tried once, and nothing was sent.
        try await Self.waitForCount(broker, "retried", atLeast: 1)
        broker = try await broker.killAndRestart()
        defer { broker.stop() }
        push = try await push.restarted()
        defer { push.stop() }
        let received = try await push.waitUntil("the push after the broker's restart") {
            $0.contains { $0.payload?.event_id == ticket.event.ID }
        }
        #expect(received.count == 1 && received[0].refused == nil)
    }

    @Test("a broker killed with SIGKILL in the middle of an attempt: once its lease runs out, the push goes out")
    func killedMidAttempt() async throws {
        var broker = try await LiveBroker.start(arguments: Self.brokerArguments)
        let push = try await PushServiceProcess.start(broker: broker.url)
        defer { push.stop() }
        let device = try await broker.enrollDevice()
        let subscription = try await push.subscribe()
        _ = try await CountersignClient(for: device).subscribePush(
            PushEndpoint(endpoint: subscription.endpoint, p256dh: subscription.p256dh, auth: subscription.auth),
            credential: device)
        try await push.answer(subscription, with: 0)
        let ticket = try await broker.backend.requestApproval(user: "alice")
        _ = try await push.waitUntil("the push it holds unanswered") { $0.contains { $0.status == 0 } }
        broker = try await broker.killAndRestart()
        defer { broker.stop() }
        try await push.answer(subscription, with: 201)
        let received = try await push.waitUntil("the push after the lease") {
            $0.contains { $0.payload?.event_id == ticket.event.ID }
        }
        // Held (more than once if the broker retried before it was killed), then delivered once.
        #expect(received.first?.status == 0 && received.last?.status == 201, "\(received.map(\.status))")
        #expect(received.filter { $0.status == 201 }.count == 1, "one delivery")
    }

    @Test("two instances on PostgreSQL send each push exactly once")
    func twoInstancesSendOnce() async throws {
        let database = try await TestPostgres.createDatabase()
        let arguments = Self.brokerArguments + ["--max-pending", "50"]
        let a = try await LiveBroker.start(arguments: arguments, database: database)
        let b = try await a.startInstance(arguments: arguments)
        let push = try await PushServiceProcess.start(broker: a.url)
        let device = try await a.enrollDevice()
        let subscription = try await push.subscribe()
        _ = try await CountersignClient(for: device).subscribePush(
            PushEndpoint(endpoint: subscription.endpoint, p256dh: subscription.p256dh, auth: subscription.auth),
            credential: device)
        var ids: [String] = []
        for index in 0..<20 {
            ids.append(try await (index % 2 == 0 ? a : b).backend.requestApproval(user: "alice").event.ID)
        }
        // Delivered is final in the store: once both instances together
        // recorded 20, nothing more can be sent.
        let deadline = ContinuousClock.now + .seconds(120)
        while try await Self.outboxCount(a, "delivered") + Self.outboxCount(b, "delivered") < 20 {
            guard ContinuousClock.now < deadline else { throw ProcessFailure("not all 20 pushes were delivered") }
            try await Task.sleep(for: .milliseconds(50))
        }
        let received = try await push.received()
        push.stop()
        a.stop()
        b.stop()
        try await TestPostgres.dropDatabase(database)
        #expect(received.count == 20, "each push once, not \(received.count) in all")
        #expect(Set(received.compactMap(\.payload?.event_id)) == Set(ids))
    }
}
