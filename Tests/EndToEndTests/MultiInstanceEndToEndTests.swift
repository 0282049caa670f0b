import AsyncHTTPClient
import CountersignClient
import CountersignCore
import CountersignPostgresTesting
import Crypto
import Foundation
import NIOCore
import Testing

/// Two real `device-broker` processes on one PostgreSQL database.
@Suite("end to end: two broker instances on one PostgreSQL database", .serialized)
struct MultiInstanceEndToEndTests {
    /// Instances A and B on a fresh database, and alice with two trusted
    /// devices enrolled through A.
    func start() async throws -> (a: LiveBroker, b: LiveBroker, devices: [DeviceCredential], database: String) {
        let database = try await TestPostgres.createDatabase()
        // Hundreds of requests for one user in a run: past a requester's hourly share.
        let arguments = ["--max-requests-per-user", "100000", "--max-requests-per-address", "100000"]
        let a = try await LiveBroker.start(arguments: arguments, database: database)
        let b = try await a.startInstance(arguments: arguments)
        var devices: [DeviceCredential] = []
        for name in ["laptop", "phone"] {
            let credential = DeviceCredential(
                broker: a.url, apiKeyID: a.apiKeyID, clientUserID: "alice", privateKey: P256.Signing.PrivateKey(),
                name: name)
            let token = try await a.backend.createEnrollmentToken(user: "alice").token
            _ = try await CountersignClient(for: credential).enroll(credential, enrollmentToken: token)
            devices.append(credential)
        }
        return (a, b, devices, database)
    }

    /// A login asked through A, and its requester's poll held by B.
    func pollHeldByB(_ a: LiveBroker, _ b: LiveBroker) async throws
        -> (ticket: EventTicket, held: Task<EventDocument, any Error>)
    {
        let ticket = try await CountersignClient(broker: a.url, apiKeyID: a.apiKeyID)
            .requestLogin(user: "alice", requesterName: "new-machine")
        let throughB = CountersignClient(broker: b.url, apiKeyID: b.apiKeyID)
        let held = Task {
            try await throughB.poll(eventID: ticket.event.ID, requesterToken: ticket.requesterToken!, wait: 25)
        }
        try await b.waitUntilHolding(1)
        return (ticket, held)
    }

    func stop(_ a: LiveBroker, _ b: LiveBroker, database: String) async throws {
        a.stop()
        b.stop()
        try await TestPostgres.dropDatabase(database)
    }

    @Test("an instance keeps --database-connections connections open, its LISTEN among them")
    func connectionPool() async throws {
        let database = try await TestPostgres.createDatabase()
        let broker = try await LiveBroker.start(arguments: ["--database-connections", "3"], database: database)
        let name = String(URLComponents(string: database)!.path.dropFirst())
        // Fails, naming the count, until the pool has opened them all.
        let check = """
            DO $$ DECLARE open int; BEGIN
                SELECT count(*) INTO open FROM pg_stat_activity WHERE datname = '\(name)';
                IF open <> 3 THEN RAISE EXCEPTION '% connections open, expected 3', open; END IF;
            END $$
            """
        var outcome = await Result { try await TestPostgres.execute(check) }
        for _ in 0..<50 where (try? outcome.get()) == nil {
            try await Task.sleep(for: .milliseconds(100))
            outcome = await Result { try await TestPostgres.execute(check) }
        }
        broker.stop()
        try await TestPostgres.dropDatabase(database)
        try outcome.get()
    }

    @Test("approvals of one quorum arriving at both instances at once are each counted once, none lost")
    func quorumRace() async throws {
        let (a, b, _, database) = try await start()
        // Four approvers with two devices each; every device's answer goes
        // to the instance its place in the list picks, all at the same moment.
        var approvers: [DeviceCredential] = []
        for user in ["bob", "carol", "erin", "frank"] {
            for name in ["laptop", "phone"] {
                let credential = DeviceCredential(
                    broker: a.url, apiKeyID: a.apiKeyID, clientUserID: user, privateKey: P256.Signing.PrivateKey(),
                    name: name)
                let token = try await a.backend.createEnrollmentToken(user: user).token
                _ = try await CountersignClient(for: credential).enroll(credential, enrollmentToken: token)
                approvers.append(credential)
            }
        }
        for round in 0..<3 {
            let ticket = try await a.backend.requestApproval(
                user: "alice", details: "Release \(round) to production",
                approvers: .users(["bob", "carol", "erin", "frank"], required: 3))
            // The requester waits on B while the approvals land on both.
            let held = Task {
                try await CountersignClient(broker: b.url, apiKeyID: b.apiKeyID).poll(
                    eventID: ticket.event.ID, requesterToken: ticket.requesterToken!, wait: 25)
            }
            var items: [(DeviceCredential, InboxItem)] = []
            for (index, device) in approvers.enumerated() {
                var credential = device
                credential.broker = index % 2 == 0 ? a.url : b.url
                let client = CountersignClient(for: credential)
                let item = try #require(
                    try await client.inbox(credential, wait: 0).first { $0.event.ID == ticket.event.ID })
                items.append((credential, item))
            }
            let answers = await withTaskGroup(of: String.self) { group in
                for (credential, item) in items {
                    group.addTask {
                        do {
                            let event = try await CountersignClient(for: credential).decide(
                                item, verdict: .approve, match: ticket.matchNumber, credential: credential)
                            return "ok:" + event.status.rawValue
                        } catch let error as CountersignError {
                            return error.code
                        } catch {
                            return "\(error)"
                        }
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
            let event = try await held.value
            #expect(event.status == .approved, "round \(round): \(answers)")
            let approvals = event.approvals ?? []
            #expect(approvals.count == 3 && Set(approvals.map(\.clientUserID)).count == 3, "\(approvals)")
            #expect(answers.filter { $0.hasPrefix("ok:") }.count == 3, "three counted: \(answers)")
            #expect(
                answers.allSatisfy { $0.hasPrefix("ok:") || ["already_approved", "already_decided"].contains($0) },
                "the others refused by name: \(answers)")
            #expect(answers.filter { $0 == "ok:approved" }.count == 1, "one approval reached the quorum")
        }
        try await stop(a, b, database: database)
    }

    @Test("a decision through A wakes the requester's long-poll held by B at once")
    func crossInstanceWake() async throws {
        let (a, b, devices, database) = try await start()
        let throughA = CountersignClient(broker: a.url, apiKeyID: a.apiKeyID)
        let throughB = CountersignClient(broker: b.url, apiKeyID: b.apiKeyID)
        var wakes: [Duration] = []
        for _ in 0..<5 {
            let ticket = try await throughA.requestLogin(user: "alice", requesterName: "new-machine")
            let held = Task {
                let event = try await throughB.poll(
                    eventID: ticket.event.ID, requesterToken: ticket.requesterToken!, wait: 25)
                return (event, ContinuousClock.now)
            }
            try await b.waitUntilHolding(1)
            let item = try #require(
                try await throughA.inbox(devices[0], wait: 0).first { $0.event.ID == ticket.event.ID })
            let decided = ContinuousClock.now
            _ = try await throughA.decide(item, verdict: .approve, match: ticket.matchNumber, credential: devices[0])
            let (event, woken) = try await held.value
            #expect(event.status == .approved)
            wakes.append(woken - decided)
        }
        // Woken by the decision's notification, not at the end of its hold
        // (which reads the event again and answers approved too): B counts a
        // wake only when a notification ended the wait. No clock involved.
        #expect(try await b.wakesCounted() == 5, "every poll held by B was woken by a notification")
        print("cross-instance wake (decision sent through A → poll on B answered): \(wakes.sorted())")

        // A trusted device's inbox long-poll on B wakes on a request
        // created through A, and again when it is withdrawn through A.
        let inbox = Task { try await throughB.inbox(devices[1], wait: 25, unchangedFrom: nil) }
        try await b.waitUntilHolding(1)
        let another = try await throughA.requestLogin(user: "alice", requesterName: "another-machine")
        let shown = try await inbox.value
        #expect(shown.events.map(\.event.ID) == [another.event.ID])
        let state = shown.state
        let afterWithdrawal = Task { try await throughB.inbox(devices[1], wait: 25, unchangedFrom: state) }
        try await b.waitUntilHolding(1)
        _ = try await throughA.withdraw(another)
        #expect(try await afterWithdrawal.value.events.isEmpty)
        // Answered by the notifications, not at the end of their holds.
        #expect(try await b.inboxWakesCounted() == 2, "both inbox polls were woken by a change")
        try await stop(a, b, database: database)
    }

    @Test("keys rotate on one store: both running instances publish the new key at once")
    func keyRotation() async throws {
        let (a, b, _, database) = try await start()
        let rotate = try RunningProcess("device-broker", ["keys", "rotate", "--database", database])
        #expect(try await rotate.exitCode() == 0, "\(rotate.text)")
        let newKey = try await rotate.waitFor(#"New signing key ([A-Za-z0-9_-]+), published now"#)
        for instance in [a, b] {
            let deadline = ContinuousClock.now + .seconds(30)
            var kids: [String] = []
            while !kids.contains(newKey), ContinuousClock.now < deadline {
                let jwks = try await HTTPClient.shared.get(url: instance.url + "/.well-known/jwks.json").get()
                struct JWKS: Decodable { struct Key: Decodable { let kid: String }; let keys: [Key] }
                kids = try JSONDecoder().decode(JWKS.self, from: Data(String(buffer: jwks.body!).utf8)).keys.map(\.kid)
                if !kids.contains(newKey) { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(kids.count == 2 && kids.contains(newKey), "\(instance.url): \(kids)")
        }
        let list = try RunningProcess("device-broker", ["keys", "list", "--database", database])
        #expect(try await list.exitCode() == 0)
        #expect(list.text.contains("\tsigning") && list.text.contains("published, signs from"), "\(list.text)")
        try await stop(a, b, database: database)
    }

    @Test("a notification lost with the LISTEN connection costs a delay, never the decision")
    func lostListenConnection() async throws {
        let (a, b, devices, database) = try await start()
        let throughA = CountersignClient(broker: a.url, apiKeyID: a.apiKeyID)
        let (ticket, held) = try await pollHeldByB(a, b)
        // Both instances lose their LISTEN connection; the decision lands while they reconnect.
        let name = String(URLComponents(string: database)!.path.dropFirst())
        try await TestPostgres.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)' AND query LIKE 'LISTEN%'")
        let item = try #require(try await throughA.inbox(devices[0], wait: 0).first { $0.event.ID == ticket.event.ID })
        let decided = ContinuousClock.now
        _ = try await throughA.decide(item, verdict: .approve, match: ticket.matchNumber, credential: devices[0])
        // A hold that runs out answers with the event as last read, pending:
        // approved means B read it again, woken by the resync after reconnecting.
        #expect(try await held.value.status == .approved, "re-read after reconnecting")
        print("wake after a lost LISTEN connection: \(ContinuousClock.now - decided)")
        try await stop(a, b, database: database)
    }

    @Test("a change committed without its wake is seen by held polls when an instance starts")
    func resyncWhenAnInstanceStarts() async throws {
        let (a, b, _, database) = try await start()
        let (ticket, held) = try await pollHeldByB(a, b)
        let wakes = try await b.wakesCounted()
        // Committed and never announced, as a change is whose instance
        // stopped between its commit and its notification.
        let now = Int(Date().timeIntervalSince1970)
        try await TestPostgres.execute(
            "UPDATE events SET status = 'rejected', decided_at = \(now), updated_at = \(now) WHERE id = '\(ticket.event.ID)'",
            in: database)
        let c = try await a.startInstance(arguments: [])
        #expect(try await held.value.status == .rejected)
        // Woken by C's resync, not answered because its hold ran out.
        #expect(try await b.wakesCounted() == wakes + 1)
        c.stop()
        try await stop(a, b, database: database)
    }

    @Test(
        "approve through A and reject through B at once, 200 times: one decision each time, a clear conflict for the other"
    )
    func racingDecisions() async throws {
        let (a, b, devices, database) = try await start()
        let throughA = CountersignClient(broker: a.url, apiKeyID: a.apiKeyID)
        let throughB = CountersignClient(broker: b.url, apiKeyID: b.apiKeyID)
        var wins = (approved: 0, rejected: 0)
        for round in 0..<200 {
            let ticket = try await throughA.requestLogin(user: "alice", requesterName: "machine-\(round)")
            let item = try #require(
                try await throughB.inbox(devices[1], wait: 0).first { $0.event.ID == ticket.event.ID })
            async let approve = Result {
                try await throughA.decide(item, verdict: .approve, match: ticket.matchNumber, credential: devices[0])
            }
            async let reject = Result {
                try await throughB.decide(item, verdict: .reject, match: nil, credential: devices[1])
            }
            let outcomes = await [approve, reject]
            let succeeded = outcomes.compactMap { try? $0.get() }
            #expect(succeeded.count == 1, "round \(round): \(outcomes)")
            for case .failure(let error) in outcomes {
                #expect((error as? CountersignError)?.code == "already_decided", "round \(round): \(error)")
            }
            let final = try await a.backend.event(id: ticket.event.ID)
            #expect(final.status == succeeded.first?.status, "round \(round): the stored decision is the winner's")
            if final.status == .approved { wins.approved += 1 } else { wins.rejected += 1 }
        }
        print("racing decisions over 200 rounds: approve won \(wins.approved), reject won \(wins.rejected)")
        try await stop(a, b, database: database)
    }
}
