import CountersignCore
import Crypto
import Foundation
import Testing

@Suite("quorum rules: M of N approvers")
struct QuorumRulesTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func device(_ user: String, issuer: String = "ck_app", suspended: Bool = false) -> TrustedDevice {
        var device = TrustedDevice(
            publicKey: DevicePublicKey(P256.Signing.PrivateKey().publicKey), issuer: issuer, clientUserID: user,
            name: "laptop", type: "cli", createdAt: t0)
        device.suspendedAt = suspended ? t0 : nil
        return device
    }

    func event(
        approvers: [String] = ["alice", "bob", "carol"], required: Int = 2, allowRequester: Bool = false,
        match: String? = "42"
    ) -> ApprovalEvent {
        ApprovalEvent(
            id: "ev_1", createdAt: t0, updatedAt: t0, issuer: "ck_app", clientUserID: "dave", name: "TRANSACTION",
            ip: "127.0.0.1", location: "Unknown", method: .trustedDevice, storedStatus: .pending, expiresAt: t0 + 60,
            details: "Pay 5,000 EUR", requesterName: nil, nonce: "n", matchNumber: match, wrongMatches: 0,
            requesterTokenDigest: nil, decidedBy: nil, decidedAt: nil, decision: nil,
            quorum: ApproverQuorum(users: approvers, requiredApprovals: required, allowRequester: allowRequester))
    }

    func claims(_ verdict: Verdict, match: String? = "42") -> DecisionClaims {
        DecisionClaims(evt: "ev_1", nonce: "n", decision: verdict, match: match, aud: "x", iat: 0, jti: "j")
    }

    /// `event` after `device`'s approval at `at`, as the transition writes it.
    func approving(_ event: ApprovalEvent, by device: TrustedDevice, at: Date) -> ApprovalEvent {
        event.approved(
            with: QuorumApproval(
                clientUserID: device.clientUserID, deviceID: device.id, decision: "jws-" + device.clientUserID,
                approvedAt: at), now: at)
    }

    @Test("2 of 3: the first approval counts and leaves it pending, the second approves it")
    func twoOfThree() {
        let alice = device("alice")
        let bob = device("bob")
        let start = event()
        #expect(DecisionRules.evaluate(claims(.approve), by: alice, on: start, now: t0) == .countApproval)
        let once = approving(start, by: alice, at: t0 + 1)
        #expect(once.storedStatus == .pending && once.approvals.count == 1 && once.decidedBy == nil)
        #expect(WebhookNotice.decided(once, now: t0 + 1)?.type == .eventApprovalAdded)
        #expect(DecisionRules.evaluate(claims(.approve), by: bob, on: once, now: t0 + 2) == .countApproval)
        let twice = approving(once, by: bob, at: t0 + 2)
        #expect(twice.storedStatus == .approved && twice.decidedBy == bob.id && twice.decision == "jws-bob")
        #expect(twice.approvals.map(\.clientUserID) == ["alice", "bob"])
        #expect(WebhookNotice.decided(twice, now: t0 + 2)?.type == .eventApproved)
        #expect(
            DecisionRules.evaluate(claims(.approve), by: device("carol"), on: twice, now: t0 + 3)
                == .refused(.alreadyDecided))
    }

    @Test("a person counts once, whichever of their devices approves again")
    func distinctPeople() {
        let once = approving(event(), by: device("alice"), at: t0 + 1)
        #expect(
            DecisionRules.evaluate(claims(.approve), by: device("alice"), on: once, now: t0 + 2)
                == .refused(.alreadyApproved))
        // A change of mind is still heard: any approver's rejection rejects.
        #expect(
            DecisionRules.evaluate(claims(.reject, match: nil), by: device("alice"), on: once, now: t0 + 2)
                == .settle(.rejected))
    }

    @Test("one rejection rejects; fraud from an approver is a plain rejection")
    func rejections() {
        #expect(
            DecisionRules.evaluate(claims(.reject, match: nil), by: device("bob"), on: event(), now: t0)
                == .settle(.rejected))
        #expect(
            DecisionRules.evaluate(claims(.fraud, match: nil), by: device("bob"), on: event(), now: t0)
                == .settle(.rejected))
        let rejected = event().rejected(by: "dev-bob", decision: "jws", assertion: nil, now: t0 + 1)
        #expect(rejected.storedStatus == .rejected && rejected.decidedBy == "dev-bob" && rejected.decidedAt == t0 + 1)
    }

    @Test("the requester, outsiders and another app's users are not approvers")
    func notApprovers() {
        let approve = claims(.approve)
        #expect(DecisionRules.evaluate(approve, by: device("dave"), on: event(), now: t0) == .refused(.notApprover))
        #expect(
            DecisionRules.evaluate(
                approve, by: device("dave"), on: event(approvers: ["dave", "bob"], required: 1),
                now: t0) == .refused(.notApprover))
        #expect(
            DecisionRules.evaluate(
                approve, by: device("dave"), on: event(approvers: ["dave", "bob"], required: 1, allowRequester: true),
                now: t0) == .countApproval)
        #expect(DecisionRules.evaluate(approve, by: device("erin"), on: event(), now: t0) == .refused(.notApprover))
        #expect(
            DecisionRules.evaluate(approve, by: device("bob", issuer: "ck_other"), on: event(), now: t0)
                == .refused(.notApprover))
        #expect(
            DecisionRules.evaluate(approve, by: device("bob", suspended: true), on: event(), now: t0)
                == .refused(.suspendedDevice))
    }

    @Test("each approver types the number; a wrong one is counted, not an approval")
    func numbers() {
        #expect(
            DecisionRules.evaluate(claims(.approve, match: "24"), by: device("bob"), on: event(), now: t0)
                == .wrongMatch)
        #expect(
            DecisionRules.evaluate(claims(.approve, match: nil), by: device("bob"), on: event(), now: t0)
                == .refused(.matchRequired))
        #expect(
            DecisionRules.evaluate(claims(.approve), by: device("bob"), on: event(), now: t0 + 60)
                == .refused(.expired))
    }

    @Test("a quorum is refused when it cannot be met or names a user twice")
    func refusals() {
        #expect(ApproverQuorum(users: ["a", "b"], requiredApprovals: 2).refusal(requester: "c") == nil)
        #expect(ApproverQuorum(users: ["a", "b"], requiredApprovals: 2).refusal(requester: "a") != nil)
        #expect(
            ApproverQuorum(users: ["a", "b"], requiredApprovals: 2, allowRequester: true).refusal(requester: "a")
                == nil)
        #expect(ApproverQuorum(users: ["a", "b"], requiredApprovals: 3).refusal(requester: "c") != nil)
        #expect(ApproverQuorum(users: ["a", "b"], requiredApprovals: 0).refusal(requester: "c") != nil)
        #expect(ApproverQuorum(users: ["a", "a"], requiredApprovals: 1).refusal(requester: "c") != nil)
        #expect(ApproverQuorum(users: [], requiredApprovals: 1).refusal(requester: "c") != nil)
        #expect(ApproverQuorum(users: ["a\nb"], requiredApprovals: 1).refusal(requester: "c") != nil)
        let many = (0...ApproverQuorum.maxApprovers).map { "u\($0)" }
        #expect(ApproverQuorum(users: many, requiredApprovals: 1).refusal(requester: "c") != nil)
    }

    @Test("user ids compare byte for byte: a look-alike id is another person")
    func lookAlikes() {
        let karl = event(approvers: ["Karl", "alice"], required: 2)
        let kelvin = device("\u{212A}arl")
        #expect("\u{212A}arl" == "Karl", "Swift's == takes them as one")
        #expect(DecisionRules.evaluate(claims(.approve), by: kelvin, on: karl, now: t0) == .refused(.notApprover))
        #expect(!karl.isAnswered(by: kelvin))
        let approved = approving(karl, by: device("Karl"), at: t0 + 1)
        #expect(!approved.isApproved(by: "\u{212A}arl") && approved.isApproved(by: "Karl"))
        #expect(ApproverQuorum(users: ["Karl", "\u{212A}arl"], requiredApprovals: 2).refusal(requester: "d") == nil)
        #expect(
            ApproverQuorum(users: ["jos\u{E9}", "jose\u{301}"], requiredApprovals: 1).refusal(requester: "d") == nil)
        let requester = event(approvers: ["\u{212A}arl", "bob"], required: 1)
        var own = requester
        own.clientUserID = "Karl"
        #expect(own.answeringUsers == ["\u{212A}arl", "bob"], "the requester Karl leaves the Kelvin user in")
    }

    @Test("its approvers answer it, not the user who asks")
    func answering() {
        #expect(event().answeringUsers == ["alice", "bob", "carol"])
        #expect(event(approvers: ["dave", "bob"], required: 1).answeringUsers == ["bob"])
        #expect(event().isAnswered(by: device("bob")) && !event().isAnswered(by: device("dave")))
    }
}
