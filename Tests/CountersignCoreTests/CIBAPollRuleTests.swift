import CountersignCore
import Foundation
import Testing

@Suite("CIBA: the token endpoint's poll rule and auth_req_id")
struct CIBAPollRuleTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    var request: CIBARequest {
        CIBARequest(eventID: "ev_1", apiKeyID: "ck_app", scope: "openid", interval: 2, nextPollAt: t0, createdAt: t0)
    }

    @Test("pending: paced by the interval; too soon: slow_down, and the interval grows by 5 s each time")
    func pacing() {
        guard case .pending(let next) = CIBAPollRule.poll(request, status: .pending, now: t0) else {
            Issue.record("a poll on time is pending")
            return
        }
        #expect(next.nextPollAt == t0 + 2 && next.interval == 2)
        guard case .slowDown(let slowed) = CIBAPollRule.poll(next, status: .pending, now: t0 + 1) else {
            Issue.record("a poll before nextPollAt is slow_down")
            return
        }
        #expect(slowed.interval == 7 && slowed.nextPollAt == t0 + 8)
        guard case .slowDown(let slower) = CIBAPollRule.poll(slowed, status: .pending, now: t0 + 2) else {
            Issue.record("again too soon")
            return
        }
        #expect(slower.interval == 12)
    }

    @Test("approved issues once, and is never paced; rejected is denied; expired is expired")
    func outcomes() {
        guard case .issue(let redeemed) = CIBAPollRule.poll(request, status: .approved, now: t0 - 1) else {
            Issue.record("approved issues tokens, even polled early")
            return
        }
        #expect(redeemed.redeemedAt == t0 - 1)
        #expect(CIBAPollRule.poll(redeemed, status: .approved, now: t0 + 5) == .redeemed)
        #expect(CIBAPollRule.poll(request, status: .rejected, now: t0) == .denied)
        #expect(CIBAPollRule.poll(request, status: .expired, now: t0) == .expired)
    }

    @Test("a CIBA client is pinged when its event ends, decided or expired; no other event looks for one")
    func pings() {
        func event(_ channel: EventChannel, _ status: EventStatus) -> ApprovalEvent {
            ApprovalEvent(
                id: "ev_1", createdAt: t0, updatedAt: t0, issuer: "ck_app", clientUserID: "alice", name: "LOGIN",
                ip: "127.0.0.1", location: "Unknown", method: .trustedDevice, storedStatus: status, expiresAt: t0 + 60,
                details: nil, requesterName: nil, nonce: "n", matchNumber: nil, wrongMatches: 0,
                requesterTokenDigest: nil, decidedBy: nil, decidedAt: nil, decision: nil, channel: channel)
        }
        #expect(event(.ciba, .approved).pingsCIBAClient(at: t0))
        #expect(event(.ciba, .rejected).pingsCIBAClient(at: t0))
        #expect(event(.ciba, .pending).pingsCIBAClient(at: t0 + 60), "expired")
        #expect(!event(.ciba, .pending).pingsCIBAClient(at: t0), "still pending: a wrong number")
        for channel in EventChannel.allCases where channel != .ciba {
            #expect(!event(channel, .approved).pingsCIBAClient(at: t0), "\(channel)")
            #expect(!event(channel, .pending).pingsCIBAClient(at: t0 + 60), "\(channel)")
        }
    }

    @Test("auth_req_id: event id and secret, and nothing else parses")
    func authRequestIDs() throws {
        let id = CIBARequest.authRequestID(eventID: "ev_abc", secret: "s3cret")
        let parsed = try #require(CIBARequest.parse(authRequestID: id))
        #expect(parsed.eventID == "ev_abc" && parsed.secret == "s3cret")
        for bad in [
            "", "ev_abc", "ev_abc.", ".secret", "xx_abc.secret", "ev_a.b.c",
            "ev_" + String(repeating: "a", count: 70) + ".s",
        ] {
            #expect(CIBARequest.parse(authRequestID: bad) == nil, "\(bad)")
        }
    }
}
