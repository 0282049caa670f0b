import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

/// Running the broker: shutdown, health, metrics, backups, keys.
@Suite("end to end: operating the broker", .serialized)
struct OperationsEndToEndTests {
    @Test("SIGTERM: held long-polls are answered at once with the current state, and the broker exits 0")
    func gracefulShutdown() async throws {
        let broker = try await LiveBroker.start(arguments: ["--log-level", "notice"])
        defer { broker.stop() }
        let device = DeviceCredential(
            broker: broker.url, apiKeyID: broker.apiKeyID, clientUserID: "alice",
            privateKey: P256.Signing.PrivateKey(), name: "laptop")
        let token = try await broker.backend.createEnrollmentToken(user: "alice").token
        let client = CountersignClient(for: device)
        _ = try await client.enroll(device, enrollmentToken: token)
        let other = DeviceCredential(
            broker: broker.url, apiKeyID: broker.apiKeyID, clientUserID: "bob", privateKey: P256.Signing.PrivateKey(),
            name: "phone")
        _ = try await client.enroll(
            other, enrollmentToken: try await broker.backend.createEnrollmentToken(user: "bob").token)
        let ticket = try await client.requestLogin(user: "alice", requesterName: "new-machine")
        // Both polls start together, after every setup step: on a busy
        // machine the setup outlasted a poll started before it, which then
        // ended on its own before the broker held the two.
        let requester = Task {
            try await client.poll(eventID: ticket.event.ID, requesterToken: ticket.requesterToken!, wait: 30)
        }
        let inbox = Task { try await client.inbox(other, wait: 30) }
        try await broker.waitUntilHolding(2)

        let signalled = ContinuousClock.now
        kill(broker.process.process.processIdentifier, SIGTERM)
        let event = try await requester.value
        #expect(event.status == .pending, "answered with the state as it is; the client polls again elsewhere")
        #expect(try await inbox.value.isEmpty)
        #expect(try await broker.process.exitCode(timeout: .seconds(60)) == 0, "\(broker.process.text)")
        // The broker's own count: polls ended by the shutdown, not by their hold.
        #expect(
            broker.process.text.contains("stopped serving: 2 held long-polls answered at once"),
            "\(broker.process.text)")
        print("graceful shutdown with two held long-polls: \(ContinuousClock.now - signalled)")
    }

    @Test("a broker counts as started only once its own process holds the port")
    func ownPort() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let port = try #require(Int(broker.url.split(separator: ":").last!))
        #expect(listens(pid: broker.process.process.processIdentifier, port: port))
        #expect(!listens(pid: getpid(), port: port), "the test process answers nothing on it")
        #expect(!listens(pid: broker.process.process.processIdentifier, port: try freePort()))
    }

    @Test("each plain-http public URL on another host is warned of at start; an address-only one has no passkeys")
    func insecurePublicURL() async throws {
        let plain = try await LiveBroker.start(
            arguments: [
                "--public-url", "http://approver.example:{port}", "--public-url", "http://127.0.0.1:{port}",
                "--public-url", "http://login.example.net:{port}", "--log-level", "notice",
            ])
        plain.stop()
        #expect(plain.process.text.contains("is plain http on another machine than this one"), "\(plain.process.text)")
        // One line for each such URL, the first and a later one; none for the one on this machine.
        let port = try #require(plain.url.split(separator: ":").last)
        let warned = plain.process.text.split(separator: "\n").filter { $0.contains("is plain http") }
        #expect(warned.count == 2, "\(plain.process.text)")
        for url in ["http://approver.example:\(port)", "http://login.example.net:\(port)"] {
            #expect(
                warned.contains { $0.contains("the public URL \(url) is plain http") }, "\(url): \(plain.process.text)")
        }
        #expect(!warned.contains { $0.contains("127.0.0.1") }, "\(plain.process.text)")
        #expect(!plain.process.text.contains("no passkeys"), "approver.example is a domain")
        let addressed = try await LiveBroker.start(
            arguments: [
                "--public-url", "https://192.0.2.10", "--public-url", "http://127.0.0.1:{port}", "--log-level",
                "notice",
            ])
        addressed.stop()
        #expect(!addressed.process.text.contains("plain http"), "\(addressed.process.text)")
        #expect(addressed.process.text.contains("no passkeys"), "\(addressed.process.text)")
        let local = try await LiveBroker.start(arguments: ["--log-level", "notice"])
        local.stop()
        #expect(!local.process.text.contains("plain http") && !local.process.text.contains("no passkeys"))
    }

    @Test("--max-wait sets the longest hold and the inbox says it; past 15 minutes it is refused at start")
    func maxWait() async throws {
        let broker = try await LiveBroker.start(arguments: ["--max-wait", "4m"])
        defer { broker.stop() }
        let device = try await broker.enrollDevice()
        let snapshot = try await CountersignClient(for: device).inbox(device, wait: 0, unchangedFrom: nil)
        #expect(snapshot.hold == 240)
        let refused = try RunningProcess(
            "device-broker",
            ["serve", "--data-dir", try temporaryDirectory("max-wait").path, "--max-wait", "16m"])
        #expect(try await refused.exitCode() != 0)
        #expect(refused.text.contains("--max-wait must be between 1s and 15m"), "\(refused.text)")
    }

    @Test("readyz, Prometheus metrics of a round trip, and one JSON log line per request with its id and no secret")
    func observability() async throws {
        let broker = try await LiveBroker.start(arguments: ["--log-format", "json", "--log-level", "debug"])
        defer { broker.stop() }
        let connection = BrokerConnection(baseURL: broker.url)
        #expect(try await connection.health())
        let ready = try await HTTPClient.shared.get(url: broker.url + "/readyz").get()
        #expect(ready.status == .ok)

        let device = DeviceCredential(
            broker: broker.url, apiKeyID: broker.apiKeyID, clientUserID: "alice",
            privateKey: P256.Signing.PrivateKey(), name: "laptop")
        let client = CountersignClient(for: device)
        let enrollmentToken = try await broker.backend.createEnrollmentToken(user: "alice").token
        _ = try await client.enroll(device, enrollmentToken: enrollmentToken)
        let totp = try await client.createTOTPSecret(device)
        let ticket = try await client.requestLogin(user: "alice", requesterName: "new-machine")
        let held = Task {
            try await client.poll(eventID: ticket.event.ID, requesterToken: ticket.requesterToken!, wait: 25)
        }
        try await broker.waitUntilHolding(1)
        let item = try #require(try await client.inbox(device, wait: 0).first)
        _ = try await client.decide(item, verdict: .approve, match: ticket.matchNumber, credential: device)
        #expect(try await held.value.status == .approved)

        // No route: still a JSON error, counted and logged.
        let missing = try await HTTPClient.shared.get(url: broker.url + "/api/v1/no-such-route").get()
        #expect(missing.status == .notFound)
        #expect(missing.headers.first(name: "content-type") == "application/json")
        // A wrong device proof on the authenticated API: a 401, counted as an error.
        var forged = HTTPClientRequest(url: broker.url + "/api/v1/inbox")
        forged.headers.add(name: "Device-Proof", value: "e30.e30.e30")
        #expect(try await HTTPClient.shared.execute(forged, timeout: .seconds(10)).status == .unauthorized)

        let metrics = try await HTTPClient.shared.get(url: broker.url + "/metrics").get()
        let text = String(buffer: metrics.body ?? ByteBuffer())
        #expect(metrics.status == .ok)
        for expected in [
            #"countersign_events_created_total{event="LOGIN"} 1"#,
            #"countersign_events_decided_total{outcome="approved",method="TRUSTED_DEVICE"} 1"#,
            "countersign_decision_to_wake_seconds_count 1", "countersign_long_polls_held ",
            // SQLite is part of the process: available, not an outage's 0.
            "countersign_store_available 1",
            #"hb_requests{http_route="/api/v1/events/{id}/decision",http_request_method="POST",http_response_status_code="200"} 1"#,
            #"http_server_request_duration_count{http_route="/api/v1/events/{id}/decision",http_request_method="POST",http_response_status_code="200"} 1"#,
            #"hb_requests{http_route="NotFound",http_request_method="GET",http_response_status_code="404"} 1"#,
            #"hb_request_errors{http_route="/api/v1/inbox",http_request_method="GET",error_type="401"} 1"#,
            #"http_server_active_requests{http_request_method="GET"} 1"#,
        ] {
            #expect(text.contains(expected), "missing \(expected) in:\n\(text)")
        }

        broker.stop()
        let lines = broker.process.text.split(separator: "\n").filter { $0.hasPrefix("{") }
        let records = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(records.count == lines.count, "every line is one JSON object")
        for record in records {
            let time = try #require(record["time"] as? String, "\(record)")
            #expect(time.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "UTC, said: \(time)")
        }
        let requests = records.filter { $0["message"] as? String == "request" }
        let decision = requests.first { $0["http.path"] as? String == "/api/v1/events/\(ticket.event.ID)/decision" }
        #expect(decision?["http.status"] as? String == "200")
        #expect((decision?["hb.request.id"] as? String)?.isEmpty == false, "\(decision ?? [:])")
        let duration = try #require(decision?["http.duration_ms"] as? String)
        #expect(duration.wholeMatch(of: /[0-9]+\.[0-9]{2}/) != nil, "\(duration)")
        #expect(
            requests.contains {
                $0["http.path"] as? String == "/api/v1/no-such-route" && $0["http.status"] as? String == "404"
            })
        #expect(
            requests.contains { $0["http.path"] as? String == "/api/v1/inbox" && $0["http.status"] as? String == "401" }
        )
        let log = lines.joined(separator: "\n")
        for secret in [
            broker.apiSecret, enrollmentToken, ticket.requesterToken!, totp.secret.value,
            device.privateKey.pemRepresentation,
        ] {
            #expect(!log.contains(secret), "a secret reached the log")
        }
    }

    @Test("metrics have bounded labels: made-up event names count as other, made-up methods as _OTHER")
    func boundedLabels() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        _ = try await broker.enrollDevice()
        for name in ["PAY_1", "PAY_2", "LOGIN"] {
            _ = try await broker.backend.requestApproval(user: "alice", event: name)
        }
        // The HTTP parser takes only methods it knows (WebDAV's among them).
        let methods = [
            "PROPFIND", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "PURGE", "SEARCH", "REPORT", "MKCALENDAR",
        ]
        for method in methods {
            let connection = try RawConnection(port: broker.port)
            connection.send("\(method) /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            #expect(connection.readToEnd().hasPrefix("HTTP/1.1 405"), "\(method)")
        }
        let metrics = try await HTTPClient.shared.get(url: broker.url + "/metrics").get()
        let text = String(buffer: metrics.body ?? ByteBuffer())
        #expect(text.contains(#"countersign_events_created_total{event="other"} 2"#), "\(text)")
        #expect(text.contains(#"countersign_events_created_total{event="LOGIN"} 1"#))
        #expect(!text.contains("PAY_"))
        #expect(text.contains(#"http_request_method="_OTHER",http_response_status_code="405"} 10"#), "\(text)")
        for method in methods { #expect(!text.contains(#""\#(method)""#)) }
    }

    @Test("apikey rotate and revoke from the command line reach the running broker at once, and are audited")
    func apiKeyCommands() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let rotate = try RunningProcess(
            "device-broker", ["apikey", "rotate", broker.apiKeyID, "--overlap", "0s", "--json"] + broker.storeArguments)
        #expect(try await rotate.exitCode(timeout: .seconds(60)) == 0, "\(rotate.text)")
        let secret = try #require(
            try JSONDecoder().decode([String: String].self, from: rotate.json)["api_secret_key"])
        func devices(_ secret: String) async throws -> Int {
            do {
                _ = try await CountersignBackend(broker: broker.url, apiKeyID: broker.apiKeyID, apiSecretKey: secret)
                    .devices(user: "alice")
                return 200
            } catch let error as CountersignError {
                return error.status
            }
        }
        #expect(try await devices(broker.apiSecret) == 401, "the old secret, with no overlap")
        #expect(try await devices(secret) == 200)

        let revoke = try RunningProcess(
            "device-broker", ["apikey", "revoke", broker.apiKeyID, "--yes"] + broker.storeArguments)
        #expect(try await revoke.exitCode(timeout: .seconds(60)) == 0, "\(revoke.text)")
        #expect(try await devices(secret) == 401, "refused by the running broker at once")
        let list = try RunningProcess("device-broker", ["apikey", "list"] + broker.storeArguments)
        #expect(try await list.exitCode(timeout: .seconds(60)) == 0)
        #expect(list.text.contains("\trevoked "), "\(list.text)")
        #expect(list.text.hasPrefix("ID\tNAME\tCREATED\tSTATE\tREDIRECT URLS\tUSER VERIFICATION\n"), "\(list.text)")
        let bare = try RunningProcess("device-broker", ["apikey", "list", "--no-header"] + broker.storeArguments)
        #expect(try await bare.exitCode(timeout: .seconds(60)) == 0)
        #expect(bare.text.hasPrefix(broker.apiKeyID + "\t"), "\(bare.text)")
        let audit = try RunningProcess("device-broker", ["apikey", "audit", broker.apiKeyID] + broker.storeArguments)
        #expect(try await audit.exitCode(timeout: .seconds(60)) == 0)
        let actions = audit.text.split(separator: "\n").map { $0.split(separator: "\t")[1] }
        #expect(actions == ["created", "rotated", "revoked"], "\(audit.text)")
    }

    @Test("HTTPS with the operator's certificate; tokens name the https issuer; plain HTTP on that port gets nothing")
    func https() async throws {
        let directory = try temporaryDirectory("tls")
        let certificate = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        let openssl = try RunningProcess(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                "-out", certificate, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            ])
        #expect(try await openssl.exitCode() == 0, "\(openssl.text)")
        let port = try freePort()
        let broker = try RunningProcess(
            "device-broker",
            [
                "serve", "--data-dir", try temporaryDirectory("broker-data").path, "--port", String(port),
                "--tls-certificate", certificate, "--tls-key", key, "--log-level", "warning",
            ])
        defer { broker.stop() }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(certificate)
        let client = HTTPClient(configuration: .init(tlsConfiguration: tls))

        // As long as the other tests give a broker to start on a busy machine.
        let deadline = ContinuousClock.now + .seconds(120)
        var health: HTTPClient.Response?
        while health?.status != .ok, ContinuousClock.now < deadline {
            health = try? await client.get(url: "https://127.0.0.1:\(port)/healthz").get()
            if health?.status != .ok { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(health?.status == .ok, "\(broker.text)")
        let discovery = try await client.get(url: "https://127.0.0.1:\(port)/.well-known/openid-configuration").get()
        let body = String(buffer: discovery.body ?? ByteBuffer())
        let document = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        #expect(document?["issuer"] as? String == "https://127.0.0.1:\(port)")
        let plain = try? await HTTPClient.shared.get(url: "http://127.0.0.1:\(port)/healthz").get()
        #expect(plain?.status != .ok, "no answer in the clear")
        try await client.shutdown()

        // The agent says what is wrong, and how to fix it when it can.
        for (url, says) in [
            ("http://127.0.0.1:\(port)", "if the broker serves https, use https://"),
            ("https://127.0.0.1:\(port)", "its TLS certificate is not trusted here"),
        ] {
            let agent = try RunningProcess(
                "device-agent",
                [
                    "login", "--broker", url, "--api-key", "ck_x", "--user", "alice", "--config-dir",
                    try temporaryDirectory("agent").path,
                ])
            #expect(try await agent.exitCode() == 1)
            #expect(agent.text.contains("cannot reach the broker at \(url): "), "\(agent.text)")
            #expect(agent.text.contains(says), "\(agent.text)")
        }
    }

    @Test("backup while the broker runs, then restore it into a new broker: the devices and events are there")
    func backupAndRestore() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        _ = try await broker.enrollMachine(name: "laptop-A")
        let event = try await broker.backend.requestApproval(user: "alice", details: "pay 10 EUR")
        let restored = try temporaryDirectory("restored")
        let file = restored.appendingPathComponent("countersign.sqlite").path
        let backup = try RunningProcess(
            "device-broker", ["backup", "--data-dir", broker.dataDirectory.path, "--to", file])
        #expect(try await backup.exitCode() == 0, "\(backup.text)")
        let again = try RunningProcess(
            "device-broker", ["backup", "--data-dir", broker.dataDirectory.path, "--to", file])
        #expect(try await again.exitCode() != 0 && again.text.contains("never overwrites"), "\(again.text)")

        let port = try freePort()
        let copy = try RunningProcess(
            "device-broker", ["serve", "--data-dir", restored.path, "--port", String(port), "--log-level", "warning"])
        defer { copy.stop() }
        let backend = CountersignBackend(
            broker: "http://127.0.0.1:\(port)", apiKeyID: broker.apiKeyID, apiSecretKey: broker.apiSecret)
        let deadline = ContinuousClock.now + .seconds(30)
        while (try? await BrokerConnection(baseURL: "http://127.0.0.1:\(port)").health()) != true,
            ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try await backend.devices(user: "alice").map(\.name) == ["laptop-A"])
        #expect(try await backend.event(id: event.event.ID).details == "pay 10 EUR")
    }

    @Test("a restart while a login waits: the requester rides out the downtime and gets the decision")
    func restartWhileWaiting() async throws {
        var broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let machineB = try temporaryDirectory("agent-B")
        let (login, eventID, number) = try await broker.startLogin(machine: machineB)
        try await Task.sleep(for: .milliseconds(300))
        broker = try await broker.restart(after: .seconds(1))  // nobody listens for a second
        let approve = try broker.agent(
            ["approve", "--event", eventID, "--yes", "--match", number], configDirectory: machineA)
        #expect(try await approve.exitCode() == 0, "\(approve.text)")
        #expect(try await login.exitCode() == 0, "\(login.text)")
        #expect(login.text.contains("Approved"), "\(login.text)")
    }
}
