import CountersignCore
import Crypto
import Foundation
import Testing

@Suite("decision rules")
struct DecisionRulesTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func device(user: String = "alice", revoked: Bool = false) -> TrustedDevice {
        TrustedDevice(
            publicKey: DevicePublicKey(P256.Signing.PrivateKey().publicKey), issuer: "ck_app", clientUserID: user,
            name: "laptop", type: "cli", createdAt: t0, revokedAt: revoked ? t0 : nil)
    }

    func event(status: EventStatus = .pending, match: String? = "42") -> ApprovalEvent {
        ApprovalEvent(
            id: "ev_1", createdAt: t0, updatedAt: t0, issuer: "ck_app", clientUserID: "alice", name: "LOGIN",
            ip: "127.0.0.1", location: "Unknown", method: .trustedDevice, storedStatus: status, expiresAt: t0 + 60,
            details: nil, requesterName: nil, nonce: "n", matchNumber: match, wrongMatches: 0,
            requesterTokenDigest: nil, decidedBy: nil, decidedAt: nil, decision: nil)
    }

    func claims(_ verdict: Verdict, match: String? = nil) -> DecisionClaims {
        DecisionClaims(evt: "ev_1", nonce: "n", decision: verdict, match: match, aud: "x", iat: 0, jti: "j")
    }

    @Test("approve with the right number settles approved; reject needs no number")
    func settles() {
        #expect(
            DecisionRules.evaluate(claims(.approve, match: "42"), by: device(), on: event(), now: t0)
                == .settle(.approved))
        #expect(DecisionRules.evaluate(claims(.reject), by: device(), on: event(), now: t0) == .settle(.rejected))
        #expect(
            DecisionRules.evaluate(claims(.approve), by: device(), on: event(match: nil), now: t0) == .settle(.approved)
        )
    }

    @Test("a wrong or missing number does not approve")
    func matching() {
        #expect(
            DecisionRules.evaluate(claims(.approve, match: "24"), by: device(), on: event(), now: t0) == .wrongMatch)
        #expect(
            DecisionRules.evaluate(claims(.approve), by: device(), on: event(), now: t0) == .refused(.matchRequired))
    }

    @Test("revoked, foreign, late and second decisions are refused")
    func refusals() {
        let approve = claims(.approve, match: "42")
        #expect(
            DecisionRules.evaluate(approve, by: device(revoked: true), on: event(), now: t0) == .refused(.revokedDevice)
        )
        #expect(DecisionRules.evaluate(approve, by: device(user: "bob"), on: event(), now: t0) == .refused(.otherUser))
        #expect(DecisionRules.evaluate(approve, by: device(), on: event(), now: t0 + 60) == .refused(.expired))
        #expect(
            DecisionRules.evaluate(approve, by: device(), on: event(status: .rejected), now: t0)
                == .refused(.alreadyDecided))
    }

    @Test("a pending event reads as expired from the end of its window")
    func expiry() {
        #expect(event().status(at: t0 + 59.999) == .pending)
        #expect(event().status(at: t0 + 60) == .expired)
        #expect(event(status: .approved).status(at: t0 + 600) == .approved)
    }
}
