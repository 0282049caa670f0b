import AsyncHTTPClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// The console's sign-in attacked over plain HTTP, as a script would, against
/// a real broker that believes 127.0.0.1's X-Forwarded-For (another client
/// address is one header away).
@Suite("end to end: attacks on the console's sign-in")
struct ConsoleAttackEndToEndTests {
    typealias Console = ConsoleBrowserTests

    struct Answer {
        let status: Int
        let json: [String: Any]
        let cookies: [String: String]
    }

    /// A request with `cookies`, from `address` (as a proxy says), JSON both ways.
    static func call(
        _ broker: LiveBroker, _ method: HTTPMethod, _ path: String, cookies: [String: String] = [:],
        from address: String = "198.51.100.1", headers: [String: String] = [:], body: [String: Any]? = nil
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: broker.url + path)
        request.method = method
        request.headers.add(name: "X-Forwarded-For", value: address)
        request.headers.add(name: "Connection", value: "close")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if !cookies.isEmpty {
            request.headers.add(name: "Cookie", value: cookies.map { "\($0)=\($1)" }.joined(separator: "; "))
        }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let data = Data(try await response.body.collect(upTo: 1 << 20).readableBytesView)
        var set: [String: String] = [:]
        for field in response.headers["Set-Cookie"] {
            let pair = field.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
            set[String(pair[0])] = pair.count > 1 ? String(pair[1]) : ""
        }
        return Answer(
            status: Int(response.status.code),
            json: (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:], cookies: set)
    }

    /// Starts a sign-in for `name` from `address`: the attempt cookie and the number.
    static func startSignIn(_ broker: LiveBroker, _ name: String, from address: String = "198.51.100.1")
        async throws -> (attempt: String, number: String)
    {
        let started = try await call(broker, .POST, "/console/api/sign-in", from: address, body: ["operator": name])
        #expect(started.status == 201, "\(started.json)")
        let attempt = try #require(started.cookies["countersign_console_sign_in"])
        return (attempt, started.json["match_number"] as? String ?? "")
    }

    /// The operator answers on their device: yes, then the number.
    static func approve(_ broker: LiveBroker, _ name: String, device: URL, number: String) async throws {
        let approve = try Console.agent(broker, ["approve", "--timeout", "60"], device, name, stdin: "y\n\(number)\n")
        #expect(try await approve.exitCode(timeout: .seconds(120)) == 0, "\(approve.text)")
    }

    static func finish(_ broker: LiveBroker, attempt: String, from address: String = "198.51.100.1") async throws
        -> Answer
    {
        try await call(
            broker, .POST, "/console/api/session", cookies: ["countersign_console_sign_in": attempt], from: address)
    }

    @Test(
        "a TOTP code, an app-style login of the console's app, or an attempt carried to another address does not sign in"
    )
    func noSignInWithoutTheDevice() async throws {
        let broker = try await Console.startBroker()
        defer { broker.stop() }
        let device = try await Console.addOperator(broker, "alice")

        // A code from the operator's device finishes the login, but signs no one in.
        let (attempt, _) = try await Self.startSignIn(broker, "alice")
        let eventID = String(attempt.split(separator: ".")[0])
        let token = String(attempt.split(separator: ".")[1])
        let shown = try Console.agent(broker, ["code", "--json"], device, "alice")
        #expect(try await shown.exitCode() == 0, "\(shown.text)")
        let code = try await shown.waitFor(#""code" : "(\d{6})""#)
        let typed = try await Self.call(
            broker, .POST, "/api/v1/events/\(eventID)/code", headers: ["Authorization": "Bearer \(token)"],
            body: ["code": code])
        #expect(typed.status == 200, "\(typed.json)")
        let byCode = try await Self.finish(broker, attempt: attempt)
        #expect(byCode.status == 409 && byCode.json["error"] as? String == "not_approved", "\(byCode.json)")
        #expect(byCode.cookies["countersign_console"] == nil)

        // The console's app takes no requester's login from the events API,
        // no secret (rotated on the host, it is refused), and no recovery code.
        let asked = try await Self.call(
            broker, .POST, "/api/v1/events", headers: ["API_KEY_ID": ConsoleApp.apiKeyID],
            body: ["client_user_id": "alice", "requester_name": "VPN gateway"])
        #expect(asked.status == 403 && asked.json["error"] as? String == "console_app", "\(asked.json)")
        let rotate = try RunningProcess(
            "device-broker", ["apikey", "rotate", ConsoleApp.apiKeyID] + broker.storeArguments)
        #expect(try await rotate.exitCode() != 0 && rotate.text.contains("takes no secret"), "\(rotate.text)")
        let codes = try Console.agent(broker, ["recovery-codes"], device, "alice")
        #expect(try await codes.exitCode() != 0 && codes.text.contains("enrolled on the host"), "\(codes.text)")

        // Approved, but finished from another address than it was asked from.
        let (carried, number) = try await Self.startSignIn(broker, "alice")
        try await Self.approve(broker, "alice", device: device, number: number)
        #expect(try await Self.finish(broker, attempt: carried, from: "203.0.113.50").status == 401)
        #expect(try await Self.finish(broker, attempt: carried).status == 201, "from where it was asked, it does")
    }

    @Test("a session ends with the device that approved it, and a removed operator's devices are removed with them")
    func sessionsFollowDevices() async throws {
        let broker = try await Console.startBroker()
        defer { broker.stop() }
        let device = try await Console.addOperator(broker, "alice")
        let (attempt, number) = try await Self.startSignIn(broker, "alice")
        try await Self.approve(broker, "alice", device: device, number: number)
        let finished = try await Self.finish(broker, attempt: attempt)
        let secret = try #require(finished.cookies["countersign_console"])
        let csrf = try #require(finished.json["csrf_token"] as? String)
        let session = ["countersign_console": secret]
        #expect(try await Self.call(broker, .GET, "/console/api/session", cookies: session).status == 200)

        let found = try await Self.call(broker, .GET, "/console/api/users/alice", cookies: session)
        let apps = try #require(found.json["apps"] as? [[String: Any]])
        let devices = try #require(apps.first?["devices"] as? [[String: Any]])
        let deviceID = try #require(devices.first?["id"] as? String)
        // A foreign Origin is refused even when Sec-Fetch-Site says same-origin.
        for headers in [
            ["Origin": "https://attacker.example", "Sec-Fetch-Site": "same-origin"],
            ["Origin": "null"], ["Sec-Fetch-Site": "same-site"],
        ] {
            let forged = try await Self.call(
                broker, .POST, "/console/api/devices/\(deviceID)/remove", cookies: session,
                headers: headers.merging(["X-CSRF-Token": csrf]) { $1 })
            #expect(forged.status == 403 && forged.json["error"] as? String == "csrf", "\(headers): \(forged.json)")
        }
        // An operator's device is not the console's to remove: one operator
        // could lock the others out.
        let refused = try await Self.call(
            broker, .POST, "/console/api/devices/\(deviceID)/remove", cookies: session,
            headers: ["X-CSRF-Token": csrf])
        #expect(refused.status == 409 && refused.json["error"] as? String == "console_app", "\(refused.json)")
        // Its holder removes it.
        let removed = try Console.agent(broker, ["devices", "remove", deviceID, "--yes"], device, "alice")
        #expect(try await removed.exitCode() == 0, "\(removed.text)")
        #expect(
            try await Self.call(broker, .GET, "/console/api/session", cookies: session).status == 401,
            "the device that approved it is gone")

        // Removed and added again, carol starts with no device: her old one approves nothing.
        let carols = try await Console.addOperator(broker, "carol")
        let removal = try await Console.brokerCommand(broker, ["operator", "remove", "carol"])
        #expect(removal.contains("1 of their devices removed"), "\(removal)")
        _ = try await Console.brokerCommand(broker, ["operator", "add", "carol"])
        _ = try await Self.startSignIn(broker, "carol")
        let old = try Console.agent(broker, ["approve", "--timeout", "5"], carols, "carol", stdin: "y\n")
        #expect(try await old.exitCode(timeout: .seconds(120)) != 0, "\(old.text)")
    }

    @Test("starting again withdraws the earlier request, so the device lists one")
    func startAgainWithdraws() async throws {
        let broker = try await Console.startBroker()
        defer { broker.stop() }
        _ = try await Console.addOperator(broker, "alice")
        let (first, _) = try await Self.startSignIn(broker, "alice")
        // A new sign-in from the same browser (its attempt cookie) withdraws the first.
        let again = try await Self.call(
            broker, .POST, "/console/api/sign-in", cookies: ["countersign_console_sign_in": first],
            body: ["operator": "alice"])
        #expect(again.status == 201, "\(again.json)")
        let second = try #require(again.cookies["countersign_console_sign_in"])
        let earlier = try await Self.call(
            broker, .GET, "/console/api/sign-in", cookies: ["countersign_console_sign_in": first])
        #expect(earlier.json["status"] as? String == "expired", "\(earlier.json)")

        // "Start again" withdraws the waiting one and clears its cookie; a
        // foreign page cannot.
        let foreign = try await Self.call(
            broker, .DELETE, "/console/api/sign-in", cookies: ["countersign_console_sign_in": second],
            headers: ["Origin": "https://attacker.example"])
        #expect(foreign.status == 403, "\(foreign.json)")
        let withdrawn = try await Self.call(
            broker, .DELETE, "/console/api/sign-in", cookies: ["countersign_console_sign_in": second])
        #expect(withdrawn.status == 204 && withdrawn.cookies["countersign_console_sign_in"] == "")
        let ended = try await Self.call(
            broker, .GET, "/console/api/sign-in", cookies: ["countersign_console_sign_in": second])
        #expect(ended.json["status"] as? String == "expired", "\(ended.json)")
        #expect(try await Self.call(broker, .DELETE, "/console/api/sign-in").status == 204, "nothing waiting")
    }

    @Test("asking for an operator from many addresses does not keep them out: only the limits of an address hold")
    func noLockOut() async throws {
        let broker = try await Console.startBroker()
        defer { broker.stop() }
        let device = try await Console.addOperator(broker, "alice")
        // More than the per-user limits (10 pending from requesters, 30 an
        // hour), each from an address of its own.
        for index in 1...32 {
            let asked = try await Self.call(
                broker, .POST, "/console/api/sign-in", from: "192.0.2.\(index)", body: ["operator": "alice"])
            #expect(asked.status == 201, "request \(index): \(asked.json)")
        }
        // From one address, its limits hold.
        var statuses: [Int] = []
        for _ in 1...4 {
            statuses.append(
                try await Self.call(
                    broker, .POST, "/console/api/sign-in", from: "192.0.2.200", body: ["operator": "alice"]
                ).status)
        }
        #expect(statuses == [201, 201, 201, 429], "3 pending from one address")
        _ = device
    }
}
