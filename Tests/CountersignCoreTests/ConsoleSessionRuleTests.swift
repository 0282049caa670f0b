import CountersignCore
import Foundation
import Testing

@Suite("console sessions and sign-in")
struct ConsoleSessionRuleTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func session(endedAt: Date? = nil) -> ConsoleSession {
        ConsoleSession(
            digest: Data(repeating: 7, count: 32), operatorName: "alice", eventID: "ev_1", ip: "192.0.2.1",
            createdAt: start, expiresAt: start + ConsoleSessionRule.lifetime, endedAt: endedAt)
    }

    @Test("a session holds from its address until its hour is up, and not after sign-out")
    func sessions() {
        #expect(ConsoleSessionRule.check(session(), address: "192.0.2.1", now: start) == .valid)
        #expect(
            ConsoleSessionRule.check(session(), address: "192.0.2.1", now: start + ConsoleSessionRule.lifetime - 1)
                == .valid)
        #expect(
            ConsoleSessionRule.check(session(), address: "192.0.2.1", now: start + ConsoleSessionRule.lifetime)
                == .expired)
        #expect(ConsoleSessionRule.check(session(), address: "198.51.100.7", now: start) == .otherAddress)
        #expect(
            ConsoleSessionRule.check(session(endedAt: start + 5), address: "192.0.2.1", now: start + 6) == .signedOut)
        #expect(ConsoleSessionRule.check(nil, address: "192.0.2.1", now: start) == .unknown)
        // One answer for every refusal: a copied cookie learns nothing.
        let refusals = Set(
            [ConsoleSessionRule.Verdict.unknown, .expired, .signedOut, .otherAddress].map { $0.refusal ?? "" })
        #expect(refusals.count == 1 && ConsoleSessionRule.Verdict.valid.refusal == nil)
    }

    func login(issuer: String = ConsoleApp.apiKeyID, name: String = EventName.login) -> ApprovalEvent {
        ApprovalEvent.pending(
            issuer: issuer, user: "alice", name: name, ip: "192.0.2.1", location: nil, details: nil,
            requesterName: nil, matchNumber: "42", requesterTokenDigest: Data(repeating: 1, count: 32),
            newDevice: nil, now: start, window: 60)
    }

    func approved(_ event: ApprovalEvent, at: Date, method: AuthMethod = .trustedDevice) -> ApprovalEvent {
        var event = event
        event.storedStatus = .approved
        event.decidedAt = at
        event.decidedBy = "device"
        event.method = method
        return event
    }

    @Test(
        "only the console app's LOGIN, asked for by its sign-in and approved on a device in the last 5 minutes, signs in"
    )
    func signIn() {
        let id = ConsoleApp.apiKeyID
        let decided = start + 10
        #expect(
            ConsoleSessionRule.signIn(approved(login(), at: decided), consoleAppID: id, now: decided + 1) == .signIn)
        #expect(
            ConsoleSessionRule.signIn(
                approved(login(), at: decided), consoleAppID: id, now: decided + ConsoleSessionRule.signInWindow + 1)
                == .tooLate)
        #expect(ConsoleSessionRule.signIn(login(), consoleAppID: id, now: decided) == .notApproved)
        var rejected = approved(login(), at: decided)
        rejected.storedStatus = .rejected
        #expect(ConsoleSessionRule.signIn(rejected, consoleAppID: id, now: decided) == .notApproved)
        #expect(
            ConsoleSessionRule.signIn(approved(login(issuer: "ck_other"), at: decided), consoleAppID: id, now: decided)
                == .notConsoleLogin)
        #expect(
            ConsoleSessionRule.signIn(
                approved(login(name: EventName.transaction), at: decided), consoleAppID: id, now: decided)
                == .notConsoleLogin)
        #expect(
            ConsoleSessionRule.signIn(approved(login(), at: decided, method: .totp), consoleAppID: id, now: decided)
                == .notByDevice)
        // A device's own request, approved by itself, has no requester: no sign-in.
        var own = approved(login(), at: decided)
        own.requesterTokenDigest = nil
        #expect(ConsoleSessionRule.signIn(own, consoleAppID: id, now: decided) == .notConsoleLogin)
    }
}
