import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// Two real brokers on a PostgreSQL server of the test's own, under a light
/// load of create → decide, while the server crashes, stops, fails over or
/// goes silent. Nothing here waits a fixed time: the tests count answers
/// and wait for states, with generous bounds for a busy machine.
@Suite("end to end: the database's bad days", .serialized)
struct DatabaseOutageEndToEndTests {
    /// Limits opened: hundreds of requests for one user, and the pending
    /// requests an outage strands (created, never decided) until they expire.
    static let limits = [
        "--max-requests-per-user", "100000", "--max-requests-per-address", "100000", "--max-pending", "1000",
        "--max-requester-pending", "1000", "--max-pending-per-address", "1000",
    ]

    @Test("PostgreSQL crashes, restarts and stops for a while: no broker exits, 503s meanwhile, nothing lost")
    func crashAndRestart() async throws {
        try await withCluster { cluster, _ in
            try await underLoad(database: cluster.url) { a, b, load in
                // The app's webhooks of approvals, through the outages.
                let receiver = try await WebhookReceiverProcess.start()
                defer { receiver.stop() }
                let endpoint = try await WebhookEndToEndTests.webhook(
                    a, ["set", a.apiKeyID, receiver.endpoint("app"), "--type", "event.approved"])
                try await receiver.configure("app", secrets: [try #require(endpoint.secret)])
                let approvedBefore = await load.acknowledged.count

                // A crash: every connection cut, nothing checkpointed.
                try await cluster.crash()
                for broker in [a, b] { try await waitForReadiness(broker, 503) }
                #expect(try await status(a, "/healthz") == 200)
                #expect(try await metric(a, "countersign_store_available") == 0)
                try await load.waitForUnavailable(5)
                try await cluster.resume()
                for broker in [a, b] { try await waitForReadiness(broker, 200) }
                try await load.waitForAcknowledged(10)

                // Stopped for a while, with a poll held across it.
                let held = try await CountersignClient(broker: a.url, apiKeyID: a.apiKeyID)
                    .requestLogin(user: "alice", requesterName: "held")
                let poll = Task {
                    try await CountersignClient(broker: b.url, apiKeyID: b.apiKeyID)
                        .poll(eventID: held.event.ID, requesterToken: held.requesterToken!, wait: 8)
                }
                try await b.waitUntilHolding(1)
                try await cluster.halt()
                for broker in [a, b] { try await waitForReadiness(broker, 503) }
                try await load.waitForUnavailable(5)
                // The held poll answered with what it knew, not an error.
                #expect(try await poll.value.status == .pending)
                try await cluster.resume()
                for broker in [a, b] { try await waitForReadiness(broker, 200) }
                try await load.waitForAcknowledged(10)
                #expect(try await metric(a, "countersign_store_reconnects_total") ?? 0 > 0)
                #expect(try await metric(b, "countersign_store_available") == 1)

                // Every approval acknowledged since the endpoint was set is
                // sent, verified, and each event's messages share one
                // webhook-id: a retry after the outage is the same message.
                let approved = Set(await load.acknowledged.dropFirst(approvedBefore))
                // (Messages that came before the receiver knew the secret
                // were refused, and are sent again.)
                let received = try await receiver.waitUntil("every approval") { received in
                    approved.isSubset(of: Set(received.filter(\.verified).compactMap { $0.body?.data.ID }))
                }
                let ids = Dictionary(grouping: received.filter { $0.body?.type == "event.approved" }) {
                    $0.body?.data.ID ?? ""
                }
                for (event, messages) in ids {
                    #expect(Set(messages.map(\.id)).count == 1, "\(event) sent under several webhook-ids")
                }
            }
        }
    }

    @Test("a standby promoted behind the same address while the old primary turns read-only: writes resume")
    func failoverBehindOneAddress() async throws {
        try await withCluster(standby: true) { primary, standby in
            let address = try await TCPForwarder.start(to: primary.port)
            defer { address.stop() }
            var url = URLComponents(string: primary.url)!
            url.port = address.port
            try await underLoad(database: url.string!) { _, _, load in
                // The old primary refuses writes and keeps its connections
                // open; the address moves to the promoted standby.
                try await primary.makeReadOnly()
                try await standby!.promote()
                try address.forward(to: standby!.port)
                try await load.waitForAcknowledged(20)
            }
        }
    }

    @Test("a URL naming two servers: the old primary stops, the standby is promoted, the brokers find it")
    func failoverToTheNextHost() async throws {
        try await withCluster(standby: true) { primary, standby in
            let both =
                "postgres://countersign@127.0.0.1:\(primary.port),127.0.0.1:\(standby!.port)/postgres"
                + "?target_session_attrs=read-write"
            try await underLoad(database: both) { _, _, load in
                try await primary.halt()
                try await standby!.promote()
                try await load.waitForAcknowledged(20)
            }
        }
    }

    @Test("the network to PostgreSQL goes silent: 503 within seconds, readiness says so, and it serves again")
    func silentNetwork() async throws {
        try await withCluster { cluster, _ in
            let address = try await TCPForwarder.start(to: cluster.port)
            defer { address.stop() }
            var url = URLComponents(string: cluster.url)!
            url.port = address.port
            try await underLoad(database: url.string!) { a, b, load in
                try address.blackhole()
                for broker in [a, b] { try await waitForReadiness(broker, 503) }
                try await load.waitForUnavailable(5)
                try address.forward(to: cluster.port)
                for broker in [a, b] { try await waitForReadiness(broker, 200) }
                try await load.waitForAcknowledged(10)
                #expect(try await metric(a, "countersign_store_query_timeouts_total") ?? 0 > 0)
            }
        }
    }

    @Test("stopped while its database is silent, a broker exits 0; started while it is down, it waits, then serves")
    func stopAndStartDuringAnOutage() async throws {
        try await withCluster { cluster, _ in
            let address = try await TCPForwarder.start(to: cluster.port)
            defer { address.stop() }
            var url = URLComponents(string: cluster.url)!
            url.port = address.port
            let a = try await LiveBroker.start(arguments: Self.limits, database: url.string!)
            defer { a.stop() }
            try address.blackhole()
            try await waitForReadiness(a, 503)
            a.process.process.terminate()
            #expect(try await a.process.exitCode(timeout: .seconds(60)) == 0, "\(a.process.text)")
            #expect(!a.process.text.contains("Error:"), "\(a.process.text)")

            // Started while the database is stopped, it waits for it.
            try await cluster.halt()
            try address.forward(to: cluster.port)
            let port = try freePort()
            let waiting = try RunningProcess(
                "device-broker", ["serve", "--port", String(port), "--database", url.string!, "--log-level", "warning"])
            defer { waiting.stop() }
            _ = try await waiting.waitFor("(waiting for PostgreSQL)", timeout: .seconds(60))
            _ = try await waiting.waitFor("(still starting after [0-9]+ s: opening the store)", timeout: .seconds(60))
            #expect(!waiting.text.contains("answering 503"), "a broker that has not started answers nothing")
            try await cluster.resume()
            let deadline = ContinuousClock.now + .seconds(90)
            while (try? await BrokerConnection(baseURL: "http://127.0.0.1:\(port)").health()) != true {
                guard ContinuousClock.now < deadline, waiting.process.isRunning else {
                    throw ProcessFailure("the broker did not serve once PostgreSQL was back:\n\(waiting.text)")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    // MARK: The scenario

    /// Runs `body` with a cluster of its own (and a streaming standby of
    /// it), removed afterwards whatever happened.
    func withCluster(
        standby: Bool = false, _ body: (ThrowawayCluster, ThrowawayCluster?) async throws -> Void
    ) async throws {
        let primary = try await ThrowawayCluster.start()
        let outcome = await Result {
            let second = standby ? try await primary.standby() : nil
            let outcome = await Result { try await body(primary, second) }
            await second?.remove()
            try outcome.get()
        }
        await primary.remove()
        try outcome.get()
    }

    /// Two brokers on `database` and alice's trusted device, under a load
    /// of round trips while `scenario` gives them a bad day; then what every
    /// bad day must leave: both brokers running, a decision through A
    /// waking a poll held by B (LISTEN made again), no answer but success or
    /// 503 store_unavailable with Retry-After (a request left hanging on the
    /// database fails at the client's 30 s timeout, and counts as neither),
    /// and every acknowledged decision approved in the database.
    func underLoad(
        database: String, _ scenario: (_ a: LiveBroker, _ b: LiveBroker, _ load: RoundTrips) async throws -> Void
    ) async throws {
        let a = try await LiveBroker.start(arguments: Self.limits, database: database)
        defer { a.stop() }
        let b = try await a.startInstance(arguments: Self.limits)
        defer { b.stop() }
        let device = try await a.enrollDevice()
        let load = RoundTrips(a: a, b: b, device: device)
        let running = Task { await load.run() }
        let outcome = await Result {
            try await load.waitForAcknowledged(10)
            try await scenario(a, b, load)
            try await crossInstanceWake(a: a, b: b, device: device)
        }
        let tally = await load.finish(running)
        try outcome.get()
        #expect(a.process.process.isRunning && b.process.process.isRunning, "a broker exited")
        #expect(
            tally.unexpected.isEmpty,
            "answers other than success or 503 store_unavailable: \(tally.unexpected)\n\(logs(a, b))")
        for id in tally.acknowledged {
            #expect(try await a.backend.event(id: id).status == .approved, "\(id) lost")
        }
    }

    // MARK: Helpers

    /// The end of both brokers' logs, for a failure's message.
    func logs(_ a: LiveBroker, _ b: LiveBroker) -> String {
        "A:\n\(a.process.text.suffix(4000))\nB:\n\(b.process.text.suffix(4000))"
    }

    /// A poll held by B wakes with the decision made through A.
    func crossInstanceWake(a: LiveBroker, b: LiveBroker, device: DeviceCredential) async throws {
        let throughA = CountersignClient(broker: a.url, apiKeyID: a.apiKeyID)
        let ticket = try await throughA.requestLogin(user: "alice", requesterName: "wake")
        let before = try await b.wakesCounted()
        let held = Task {
            try await CountersignClient(broker: b.url, apiKeyID: b.apiKeyID)
                .poll(eventID: ticket.event.ID, requesterToken: ticket.requesterToken!, wait: 25)
        }
        try await b.waitUntilHolding(1)
        let item = try #require(try await throughA.inbox(device, wait: 0).first { $0.event.ID == ticket.event.ID })
        _ = try await throughA.decide(item, verdict: .approve, match: ticket.matchNumber, credential: device)
        #expect(try await held.value.status == .approved)
        // Woken by the notification, not by the hold running out.
        #expect(try await b.wakesCounted() == before + 1)
    }

    /// Waits until the broker's /readyz answers `expected`; each answer must
    /// come within 20 s, well within the outage (the broker's own deadline
    /// is 800 ms; 7 s was seen on a loaded machine): an answer that does not
    /// fails the test.
    func waitForReadiness(_ broker: LiveBroker, _ expected: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(90)
        var last = 0
        while ContinuousClock.now < deadline {
            last = try await status(broker, "/readyz", within: .seconds(20))
            if last == expected { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ProcessFailure("/readyz of \(broker.url) answered \(last), not \(expected), for 90 s")
    }

    func status(_ broker: LiveBroker, _ path: String, within limit: TimeAmount = .seconds(30)) async throws -> Int {
        var request = HTTPClientRequest(url: broker.url + path)
        request.headers.add(name: "Connection", value: "close")
        let response = try await HTTPClient.shared.execute(request, timeout: limit)
        _ = try await response.body.collect(upTo: 1 << 16)
        return Int(response.status.code)
    }

    /// One sample of a metric, as the broker's /metrics shows it.
    func metric(_ broker: LiveBroker, _ name: String) async throws -> Double? {
        let response = try await HTTPClient.shared.get(url: broker.url + "/metrics").get()
        let text = String(buffer: response.body ?? ByteBuffer())
        return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
            .flatMap { Double($0.split(separator: " ").last!) }
    }
}

/// Create → decide round trips, one after another, each through the other
/// instance than the one before, counting how each ended.
actor RoundTrips {
    struct Tally {
        /// Events whose approval the broker acknowledged.
        var acknowledged: [String] = []
        /// 503 store_unavailable answers with a Retry-After.
        var unavailable = 0
        /// Inboxes read without the request just made (a stale read).
        var stale = 0
        /// Anything else that went wrong, a client's timeout among them.
        var unexpected: [String] = []
    }

    let a: LiveBroker
    let b: LiveBroker
    let device: DeviceCredential
    private var tally = Tally()
    private var stopped = false
    /// The step of the round trip under way, and when that round trip began.
    private var underWay: (step: String, since: ContinuousClock.Instant)?

    init(a: LiveBroker, b: LiveBroker, device: DeviceCredential) {
        self.a = a
        self.b = b
        self.device = device
    }

    func run() async {
        var turn = 0
        while !stopped, !Task.isCancelled {
            turn += 1
            let (creator, decider) = turn.isMultiple(of: 2) ? (a, b) : (b, a)
            let requester = CountersignClient(broker: creator.url, apiKeyID: creator.apiKeyID)
            let approver = CountersignClient(broker: decider.url, apiKeyID: decider.apiKeyID)
            var step = "create through \(creator.url)" {
                didSet { underWay?.step = step }
            }
            let started = ContinuousClock.now
            underWay = (step, started)
            defer { underWay = nil }
            do {
                let ticket = try await requester.requestLogin(user: "alice", requesterName: "load")
                step = "inbox through \(decider.url)"
                let inbox = try await approver.inbox(self.device, wait: 0)
                guard let item = inbox.first(where: { $0.event.ID == ticket.event.ID }) else {
                    // Read through a connection to the old primary, just
                    // before that instance learnt it turned read-only.
                    tally.stale += 1
                    continue
                }
                step = "decision through \(decider.url)"
                let decided = try await approver.decide(
                    item, verdict: .approve, match: ticket.matchNumber, credential: self.device)
                if decided.status == .approved {
                    tally.acknowledged.append(decided.ID)
                } else {
                    tally.unexpected.append("\(decided.ID) answered \(decided.status)")
                }
                // A light load: the other tests of the suite run meanwhile.
                try await Task.sleep(for: .milliseconds(50))
            } catch let error as CountersignError
                where error.status == 503 && error.code == "store_unavailable" && error.retryAfter != nil
            {
                tally.unavailable += 1
                try? await Task.sleep(for: .milliseconds(100))
            } catch is CancellationError {
                return
            } catch {
                tally.unexpected.append("\(step), after \(ContinuousClock.now - started): \(error)")
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Waits until `count` more round trips were acknowledged than now.
    func waitForAcknowledged(_ count: Int) async throws {
        let target = tally.acknowledged.count + count
        try await waitFor("\(count) more acknowledged round trips") { $0.acknowledged.count >= target }
    }

    /// Waits until `count` more requests were answered 503 than now.
    func waitForUnavailable(_ count: Int) async throws {
        let target = tally.unavailable + count
        try await waitFor("\(count) more 503 answers") { $0.unavailable >= target }
    }

    private func waitFor(_ what: String, _ done: (Tally) -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while !done(tally) {
            guard ContinuousClock.now < deadline else {
                let current = underWay.map { "\($0.step), for \(ContinuousClock.now - $0.since)" } ?? "none"
                throw ProcessFailure(
                    "no \(what) within 120 s: \(tally); under way: \(current)\n"
                        + "A:\n\(a.process.text.suffix(3000))\nB:\n\(b.process.text.suffix(3000))")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// The events whose approval was acknowledged so far, in order.
    var acknowledged: [String] { tally.acknowledged }

    /// Stops the load once the round trip under way ends (cancelling it
    /// would count as a failure), and returns the tally.
    func finish(_ running: Task<Void, Never>) async -> Tally {
        stopped = true
        await running.value
        return tally
    }
}
