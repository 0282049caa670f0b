import CountersignBroker
import CountersignClient
import CountersignCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// A device's inbox poll is held while the pending requests are the ones it
/// shows, and answered as soon as one is added or one ends. Polls are held
/// up to an hour, in an hour's window: that one returns at all shows the
/// change woke it (the time limit fails a poll left to its hold).
@Suite("the inbox: held while unchanged, answered when a request comes or ends")
struct InboxStateTests {
    static func broker() async throws -> TestBroker {
        try await TestBroker(policy: ApprovalPolicy(window: 3600, maxWait: 3600))
    }

    @Test("every answer says how long the broker holds a poll: its --max-wait")
    func hold() async throws {
        var policy = ApprovalPolicy()
        policy.maxWait = 240
        let broker = try await TestBroker(policy: policy)
        try await broker.test { client in
            let phone = try await broker.enroll(client)
            #expect(try await broker.inboxSnapshot(client, phone.device).hold == 240)
        }
    }

    @Test(
        "a request withdrawn, answered on another device, or rejected by a report ends a held poll",
        .timeLimit(.minutes(5)))
    func endings() async throws {
        let broker = try await Self.broker()
        try await broker.test { client in
            let phone = try await broker.enroll(client)
            let laptop = try await broker.enroll(client)

            let withdrawn = try await broker.requestLogin(client)
            let shown = try await broker.inboxSnapshot(client, phone.device)
            #expect(shown.events.map(\.event.ID) == [withdrawn.event.ID])
            let state = shown.state
            async let afterWithdrawal = broker.inboxSnapshot(client, phone.device, wait: 3600, state: state)
            try await client.execute(
                uri: "/api/v1/events/\(withdrawn.event.ID)", method: .delete,
                headers: [.authorization: "Bearer \(withdrawn.requesterToken!)"]
            ) { #expect($0.status == .ok) }
            let ended = try await afterWithdrawal
            #expect(ended.events.isEmpty && ended.state != shown.state, "\(ended.events)")

            let elsewhere = try await broker.requestLogin(client)
            let beforeAnswer = try await broker.inboxSnapshot(client, phone.device).state
            async let afterAnswer = broker.inboxSnapshot(client, phone.device, wait: 3600, state: beforeAnswer)
            let item = try #require(try await broker.inbox(client, laptop.device).first)
            let decision = try await laptop.device.decision(
                on: item, .approve, match: elsewhere.matchNumber, now: broker.clock.now)
            #expect(try await broker.submit(client, eventID: elsewhere.event.ID, decision: decision).status == .ok)
            #expect(try await afterAnswer.events.isEmpty, "answered on the laptop, gone from the phone's inbox")

            let bomb = try await broker.requestLogin(client)
            let other = try await broker.requestLogin(client)
            let both = try await broker.inboxSnapshot(client, phone.device)
            #expect(Set(both.events.map(\.event.ID)) == [bomb.event.ID, other.event.ID])
            let bothState = both.state
            async let afterReport = broker.inboxSnapshot(client, phone.device, wait: 3600, state: bothState)
            let reported = try #require(
                try await broker.inbox(client, laptop.device).first { $0.event.ID == bomb.event.ID })
            let report = try await laptop.device.decision(on: reported, .fraud, match: nil, now: broker.clock.now)
            #expect(try await broker.submit(client, eventID: bomb.event.ID, decision: report).status == .ok)
            // The report and the rejection it brings are one write: both are gone at once.
            #expect(try await afterReport.events.isEmpty, "the report rejected the other one too")
        }
    }

    @Test(
        "a poll without a state is held while none is pending; with the set it shows, until one is added",
        .timeLimit(.minutes(5)))
    func additions() async throws {
        let broker = try await Self.broker()
        try await broker.test { client in
            let phone = try await broker.enroll(client)
            async let first = broker.inboxSnapshot(client, phone.device, wait: 3600)
            let one = try await broker.requestLogin(client)
            let shown = try await first
            #expect(shown.events.map(\.event.ID) == [one.event.ID])
            let state = shown.state

            // The same set, asked with its state and no wait: the same state.
            let again = try await broker.inboxSnapshot(client, phone.device, wait: 0, state: state)
            #expect(again.state == state && again.events.map(\.event.ID) == [one.event.ID])

            async let next = broker.inboxSnapshot(client, phone.device, wait: 3600, state: state)
            let two = try await broker.requestLogin(client)
            #expect(try await Set(next.events.map(\.event.ID)) == [one.event.ID, two.event.ID])
        }
    }

    @Test("a state longer than any the broker gives is refused")
    func malformedState() async throws {
        let broker = try await Self.broker()
        try await broker.test { client in
            let phone = try await broker.enroll(client)
            try await client.execute(
                uri: "/api/v1/inbox?wait=0&state=\(String(repeating: "A", count: 65))", method: .get,
                headers: try await phone.device.proofHeaders(.get, "/api/v1/inbox", now: broker.clock.now)
            ) { #expect($0.status == .badRequest, "\(String(buffer: $0.body))") }
        }
    }
}

extension TestBroker {
    /// The inbox and its state, held up to `wait` s while the pending set
    /// is the one `state` names.
    func inboxSnapshot(_ client: some TestClientProtocol, _ device: TestDevice, wait: Int = 0, state: String? = nil)
        async throws -> InboxSnapshot
    {
        try await client.execute(
            uri: "/api/v1/inbox?wait=\(wait)" + (state.map { "&state=\($0)" } ?? ""), method: .get,
            headers: try await device.proofHeaders(.get, "/api/v1/inbox", now: clock.now)
        ) { response in
            #expect(response.status == .ok, "inbox: \(String(buffer: response.body))")
            return try decode(InboxSnapshot.self, response)
        }
    }
}
