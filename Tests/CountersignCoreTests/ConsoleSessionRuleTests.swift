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

@Suite("dashboard: totals and health thresholds")
struct DashboardTests {
    func tally(
        _ status: EventStatus, _ count: Int, app: String = "ck_a", reason: StatusReason? = nil,
        method: AuthMethod = .trustedDevice, channel: EventChannel = .api
    ) -> EventTally {
        EventTally(issuer: app, channel: channel, status: status, reason: reason, method: method, count: count)
    }

    @Test("each event counted once in its state; fraud reports and TOTP fallbacks apart; groups by total")
    func totals() {
        let tallies = [
            tally(.approved, 5), tally(.approved, 2, method: .totp), tally(.rejected, 3, reason: .fraudReported),
            tally(.rejected, 1, app: "ck_b"), tally(.expired, 4, app: "ck_b", channel: .radius), tally(.pending, 1),
        ]
        let (all, byApp) = EventTotals.of(tallies, by: \.issuer)
        #expect(all.total == 16 && all.approved == 7 && all.rejected == 4 && all.expired == 4 && all.pending == 1)
        #expect(all.fraudReported == 3 && all.totpFallbacks == 2)
        #expect(byApp.map(\.key) == ["ck_a", "ck_b"] && byApp.map(\.totals.total) == [11, 5])
        let byChannel = EventTotals.of(tallies, by: \.channel.rawValue).groups
        #expect(byChannel.map(\.key) == ["api", "radius"])
        // A rejected TOTP attempt is no fallback.
        #expect(EventTotals.of([tally(.rejected, 1, method: .totp)], by: \.issuer).all.totpFallbacks == 0)
    }

    @Test("thresholds: at or above warning, at or above critical")
    func thresholds() {
        let calm = HealthCheck.reading(storeAvailable: true, outboxQueued: 99, outboxFailed: 0, protections: 0)
        #expect(calm.allSatisfy { $0.state == .ok })
        let busy = HealthCheck.reading(storeAvailable: true, outboxQueued: 100, outboxFailed: 1, protections: 10)
        #expect(busy.map(\.state) == [.ok, .warning, .warning, .critical])
        let down = HealthCheck.reading(storeAvailable: false, outboxQueued: 1000, outboxFailed: 100, protections: 0)
        #expect(down.map(\.state) == [.critical, .critical, .critical, .ok])
        #expect(down.map(\.state).max() == .critical && HealthCheck.State.warning < .critical)
    }
}
