import CountersignBroker
import CountersignCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@Suite("long-polls, limits and bad input")
struct RequestLimitTests {
    @Test("a waiter on another event is not woken by this event's decision")
    func otherWaiterSleeps() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let decided = try await broker.requestLogin(client)
            let bystander = try await broker.requestLogin(client)
            let started = ContinuousClock.now
            async let waited = broker.poll(client, bystander, wait: 2)
            try await Task.sleep(for: .milliseconds(200))
            let item = try #require(
                try await broker.inbox(client, alice.device).first { $0.event.ID == decided.event.ID })
            _ = try await broker.submit(
                client, eventID: item.event.ID,
                decision: try await alice.device.decision(on: item, .reject, match: nil, now: broker.clock.now))
            let event = try await waited
            #expect(event.status == .pending)
            #expect(ContinuousClock.now - started >= .seconds(2), "held for its full wait")
        }
    }

    /// Held 1 s, not 600: a poll held as asked would outlast the time limit,
    /// which no busy machine comes near otherwise.
    @Test("wait is capped by the broker's maximum hold", .timeLimit(.minutes(5)))
    func waitCap() async throws {
        var policy = ApprovalPolicy()
        policy.maxWait = 1
        let broker = try await TestBroker(policy: policy)
        try await broker.test { client in
            _ = try await broker.enroll(client)
            let ticket = try await broker.requestLogin(client)
            #expect(try await broker.poll(client, ticket, wait: 600).status == .pending)
            try await client.execute(
                uri: "/api/v1/events/\(ticket.event.ID)?wait=-1", method: .get,
                headers: [.authorization: "Bearer \(ticket.requesterToken!)"]
            ) { #expect($0.status == .badRequest) }
        }
    }

    @Test("the inbox long-poll wakes when a request for the user arrives")
    func inboxWakes() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            async let items = broker.inbox(client, alice.device, wait: 30)
            try await Task.sleep(for: .milliseconds(200))
            let ticket = try await broker.requestLogin(client)
            // Woken with the request: a poll held to its end would answer none.
            #expect(try await items.map(\.event.ID) == [ticket.event.ID])
        }
    }

    @Test("prompt bombing: past the cap of pending requests, 429 with Retry-After")
    func pendingCap() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            _ = try await broker.enroll(client)
            for _ in 0..<3 { _ = try await broker.requestLogin(client) }
            broker.clock.advance(by: 10)
            try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.appHeaders,
                body: json(["client_user_id": "alice"])
            ) { response in
                #expect(response.status == .tooManyRequests && errorCode(response) == "too_many_pending")
                #expect(response.headers[.retryAfter] == "50")
            }
            broker.clock.advance(by: 50)
            _ = try await broker.requestLogin(client)
        }
    }

    @Test(
        "without a secret only LOGIN can be asked; a user without devices looks like any other to a requester, and is a clear conflict to the backend"
    )
    func requesterLimits() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            /// The answer's status, and the shape of its JSON (keys, nested keys), for a request by `headers`.
            func ask(_ user: String, _ headers: HTTPFields) async throws -> (HTTPResponse.Status, [String], String?) {
                try await client.execute(
                    uri: "/api/v1/events", method: .post, headers: headers, body: json(["client_user_id": user])
                ) { response in
                    let object =
                        try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                    let event = object?["event"] as? [String: Any] ?? [:]
                    let shape = (object ?? [:]).keys.sorted() + event.keys.sorted().map { "event." + $0 }
                    return (response.status, shape, errorCode(response))
                }
            }
            _ = try await broker.enroll(client, user: "bob")
            let unenrolled = try await ask("alice", broker.appHeaders)
            let enrolled = try await ask("bob", broker.appHeaders)
            #expect(unenrolled.0 == .created && unenrolled.0 == enrolled.0)
            #expect(unenrolled.1 == enrolled.1, "the same answer, field for field")
            #expect(try await ask("alice", broker.backendHeaders).2 == "no_trusted_device")
            _ = try await broker.enroll(client)
            try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.appHeaders,
                body: json(["client_user_id": "alice", "event": "TRANSACTION", "details": "pay 1000 EUR"])
            ) { #expect($0.status == .forbidden && errorCode($0) == "secret_required") }
            try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.backendHeaders,
                body: json(["client_user_id": "alice", "event": "TRANSACTION", "details": "pay 1000 EUR"])
            ) { response in
                #expect(response.status == .created)
                let ticket = try decode(EventTicket.self, response)
                #expect(ticket.event.details == "pay 1000 EUR")
            }
        }
    }

    @Test("bad input gets a clear 4xx JSON error and changes nothing")
    func badInput() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let ticket = try await broker.requestLogin(client)
            var plainText = broker.appHeaders
            plainText[.contentType] = "text/plain"
            let cases: [(String, HTTPRequest.Method, HTTPFields, ByteBuffer?, HTTPResponse.Status)] = [
                ("/api/v1/events", .post, broker.appHeaders, ByteBuffer(string: "{not json"), .badRequest),
                (
                    "/api/v1/events", .post, broker.appHeaders, ByteBuffer(string: #"{"client_user_id": 5}"#),
                    .badRequest
                ),
                (
                    "/api/v1/events", .post, plainText, ByteBuffer(string: #"{"client_user_id":"alice"}"#),
                    .unsupportedMediaType
                ),
                (
                    "/api/v1/events", .post, broker.appHeaders, ByteBuffer(repeating: UInt8(ascii: " "), count: 70_000),
                    .contentTooLarge
                ),
                (
                    "/api/v1/events", .post, broker.appHeaders,
                    ByteBuffer(string: #"{"client_user_id":"alice","event":"lower case"}"#), .badRequest
                ),
                ("/api/v1/events/ev_unknown", .get, broker.backendHeaders, nil, .notFound),
                (
                    "/api/v1/events/\(ticket.event.ID)/decision", .post, [.contentType: "application/json"],
                    ByteBuffer(string: #"{"decision":"e30.e30.***"}"#), .badRequest
                ),
                (
                    "/api/v1/events/\(ticket.event.ID)/decision", .post, [.contentType: "application/json"],
                    ByteBuffer(string: #"{"decision":"only.two"}"#), .badRequest
                ),
                (
                    "/api/v1/events/\(ticket.event.ID)/decision", .post, [.contentType: "application/json"],
                    ByteBuffer(string: #"{}"#), .badRequest
                ),
                ("/api/v1/users/alice/events?status=bogus", .get, broker.backendHeaders, nil, .badRequest),
                ("/api/v1/users/alice/events?limit=100000", .get, broker.backendHeaders, nil, .badRequest),
                ("/api/v1/no-such-route", .get, broker.backendHeaders, nil, .notFound),
                ("/no-such-page", .get, [:], nil, .notFound),
            ]
            for (uri, method, headers, body, status) in cases {
                try await client.execute(uri: uri, method: method, headers: headers, body: body) { response in
                    #expect(response.status == status, "\(method) \(uri): \(String(buffer: response.body))")
                    #expect(response.headers[.contentType] == "application/json", "\(uri)")
                    #expect(errorCode(response) != nil, "\(uri) answers an error document")
                }
            }
            #expect(try await broker.inbox(client, alice.device).map(\.event.ID) == [ticket.event.ID])
            #expect(try await broker.poll(client, ticket).status == .pending)
        }
    }

    @Test(
        "polls past a caller's limit: a device's and a requester's oldest are answered at once, the newest stay held and wake"
    )
    func pollsPerCaller() async throws {
        // Held for two minutes if nothing ends them: on a busy machine the
        // polls answered at once can take most of half a minute to come back.
        var policy = ApprovalPolicy()
        policy.maxWait = 120
        let broker = try await TestBroker(policy: policy)
        let hub = broker.environment.hub
        let limit = hub.pollsPerHolder
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            // Three times the limit, held until something ends them.
            try await withThrowingTaskGroup(of: [InboxItem].self) { group in
                for _ in 0..<limit * 3 { group.addTask { try await broker.inbox(client, alice.device, wait: 120) } }
                for _ in 0..<limit * 2 { #expect(try await group.next()?.isEmpty == true) }
                #expect(hub.held == limit, "the newest polls are held")
                let ticket = try await broker.requestLogin(client)
                for try await items in group { #expect(items.map(\.event.ID) == [ticket.event.ID]) }
            }
            let ticket = try await broker.requestLogin(client)
            try await withThrowingTaskGroup(of: EventDocument.self) { group in
                for _ in 0..<limit * 3 { group.addTask { try await broker.poll(client, ticket, wait: 120) } }
                for _ in 0..<limit * 2 { #expect(try await group.next()?.status == .pending) }
                #expect(hub.held == limit, "the newest polls are held")
                let item = try #require(
                    try await broker.inbox(client, alice.device).first { $0.event.ID == ticket.event.ID })
                let decision = try await alice.device.decision(
                    on: item, .approve, match: ticket.matchNumber, now: broker.clock.now)
                #expect(try await broker.submit(client, eventID: item.event.ID, decision: decision).status == .ok)
                for try await event in group { #expect(event.status == .approved) }
            }
        }
    }
}
