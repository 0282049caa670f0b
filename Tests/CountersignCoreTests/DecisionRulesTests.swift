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

    @Test("wrong numbers count; the last one allowed rejects, with no deciding device")
    func wrongMatches() {
        let once = event().countingWrongMatch(maxWrong: 3, at: t0 + 1)
        #expect(once.wrongMatches == 1 && once.storedStatus == .pending && once.decidedAt == nil)
        #expect(once.updatedAt == t0 + 1)
        let third = once.countingWrongMatch(maxWrong: 3, at: t0 + 2).countingWrongMatch(maxWrong: 3, at: t0 + 3)
        #expect(third.wrongMatches == 3 && third.storedStatus == .rejected && third.decidedAt == t0 + 3)
        #expect(third.decidedBy == nil && third.statusReason == .tooManyWrongMatches)
        let policy = ApprovalPolicy(maxWrongMatches: 3)
        #expect(policy.wrongMatchesLeft(after: once) == 2 && policy.wrongMatchesLeft(after: third) == 0)
    }

    @Test("the pending limits' defaults are PendingLimits's own, and the policy starts from them")
    func pendingDefaults() {
        #expect(ApprovalPolicy().pendingLimits == PendingLimits())
        let limits = PendingLimits()
        #expect(limits.perUser == 3 && limits.perUserFromRequesters == 10 && limits.perAddress == 10)
        #expect(limits.requestsPerUser == 30 && limits.requestsPerAddress == 120)
    }

    @Test("a fraud report rejects the user's events still open, and never shortens a protection")
    func fraudCascade() {
        let rejected = event().rejectedByFraudReport(at: t0 + 5)
        #expect(rejected?.storedStatus == .rejected && rejected?.statusReason == .userProtected)
        #expect(rejected?.decidedAt == t0 + 5 && rejected?.decidedBy == nil)
        #expect(event().rejectedByFraudReport(at: t0 + 60) == nil, "expired: left as it is")
        #expect(event(status: .approved).rejectedByFraudReport(at: t0) == nil, "decided: left as it is")
        var withdrawn = event()
        withdrawn.withdrawnAt = t0 + 1
        withdrawn.expiresAt = t0 + 1
        #expect(withdrawn.rejectedByFraudReport(at: t0 + 2) == nil, "withdrawn: left as it is")
        #expect(FraudProtection.until(t0 + 900, running: t0 + 1800) == t0 + 1800)
        #expect(FraudProtection.until(t0 + 900, running: t0 + 300) == t0 + 900)
        #expect(FraudProtection.until(t0 + 900, running: nil) == t0 + 900)
        var reported = event(status: .rejected)
        reported.id = "ev_reported"
        let open = event()
        let report = FraudProtection.report(
            reported, pending: [reported, open, withdrawn], requested: t0 + 900, running: t0 + 1800, now: t0 + 2)
        #expect(report.event == reported && report.protectedUntil == t0 + 1800)
        #expect(report.alsoRejected.map(\.id) == [open.id], "the open one only, never the reported one again")
    }

    @Test("a pending event reads as expired from the end of its window")
    func expiry() {
        #expect(event().status(at: t0 + 59.999) == .pending)
        #expect(event().status(at: t0 + 60) == .expired)
        #expect(event(status: .approved).status(at: t0 + 600) == .approved)
    }

    @Test("a withdrawal closes a pending event; again it changes nothing; a decided or expired one stays")
    func withdrawal() {
        var pending = event()
        #expect(Withdrawal.evaluate(pending, now: t0 + 1) == .withdraw)
        #expect(Withdrawal.evaluate(pending, now: t0 + 60) == .refused(.expired))
        #expect(Withdrawal.evaluate(event(status: .approved), now: t0 + 1) == .refused(.alreadyDecided))
        let withdrawn = pending.withdrawn(at: t0 + 1)
        #expect(withdrawn.withdrawnAt == t0 + 1 && withdrawn.expiresAt == t0 + 1 && withdrawn.updatedAt == t0 + 1)
        #expect(withdrawn.status(at: t0 + 1) == .expired && withdrawn.closure(at: t0 + 1) == .withdrawn)
        pending.withdrawnAt = t0 + 1
        pending.expiresAt = t0 + 1
        #expect(Withdrawal.evaluate(pending, now: t0 + 2) == .alreadyWithdrawn)
        #expect(pending.statusReason == .withdrawn)
        #expect(
            DecisionRules.evaluate(claims(.approve, match: "42"), by: device(), on: pending, now: t0 + 2)
                == .refused(.withdrawn))
    }

    @Test(
        "code attempts: counted while the event takes more (also a while after it ran out unanswered), refused for another user, a closed event, or none left"
    )
    func codeAttempts() {
        let limits = CodeLimits(perEvent: 2)
        var pending = event()
        #expect(
            limits.attempt(on: pending, issuer: "ck_app", clientUserID: "alice", now: t0) == .counted(attemptsLeft: 1))
        #expect(limits.attempt(on: pending, issuer: "ck_app", clientUserID: "bob", now: t0) == .refused(.unknownEvent))
        #expect(limits.attempt(on: nil, issuer: "ck_app", clientUserID: "alice", now: t0) == .refused(.unknownEvent))
        #expect(
            limits.attempt(on: pending, issuer: "ck_app", clientUserID: "alice", now: t0 + 60)
                == .counted(attemptsLeft: 1), "expired unanswered: a code typed late still records the login")
        let tooLate = pending.expiresAt + CodeLimits.lateCodeWindow
        #expect(
            limits.attempt(on: pending, issuer: "ck_app", clientUserID: "alice", now: tooLate) == .refused(.notPending))
        var withdrawn = pending
        withdrawn.withdrawnAt = t0 + 1
        withdrawn.expiresAt = t0 + 1
        #expect(
            limits.attempt(on: withdrawn, issuer: "ck_app", clientUserID: "alice", now: t0 + 2) == .refused(.notPending)
        )
        var decided = pending
        decided.storedStatus = .rejected
        #expect(
            limits.attempt(on: decided, issuer: "ck_app", clientUserID: "alice", now: t0 + 2) == .refused(.notPending))
        pending.codeAttempts = 2
        #expect(
            limits.attempt(on: pending, issuer: "ck_app", clientUserID: "alice", now: t0 + 10)
                == .refused(.exhausted(retryAfter: 50)))
        #expect(limits.lockedFor(until: t0 + 30, now: t0 + 10) == 20 && limits.lockedFor(until: t0, now: t0) == nil)
        #expect(CodeLimits().lockout(afterFailures: 9) == nil && CodeLimits().lockout(afterFailures: 11) == 120)
    }

    @Test("code changes: an attempt counts on the event and the user, locks out; a right code clears and approves")
    func codeChanges() throws {
        let limits = CodeLimits(perEvent: 5, lockoutAfter: 2, firstLockout: 60)
        let pending = event()
        let fresh = CodeState(failures: .none, event: pending, device: nil)
        let (first, left) = try limits.counting(
            attemptOn: fresh, eventAsked: true, issuer: "ck_app", clientUserID: "alice", now: t0 + 1
        ).get()
        #expect(left == 4 && first.event?.codeAttempts == 1 && first.event?.updatedAt == t0 + 1)
        #expect(first.failures == CodeFailures(consecutive: 1, lastAttemptAt: t0 + 1) && first.notices.isEmpty)
        let second = try limits.counting(
            attemptOn: CodeState(failures: first.failures, event: nil, device: nil), eventAsked: false,
            issuer: "ck_app", clientUserID: "alice", now: t0 + 2
        ).get().0
        #expect(second.failures == CodeFailures(consecutive: 2, lockedUntil: t0 + 62, lastAttemptAt: t0 + 2))
        #expect(second.event == nil && second.notices.map(\.type) == [.accountLocked])
        let locked = CodeState(failures: second.failures, event: pending, device: nil)
        #expect(
            limits.counting(attemptOn: locked, eventAsked: true, issuer: "ck_app", clientUserID: "alice", now: t0 + 3)
                .failureValue == .lockedOut(retryAfter: 59), "the lock-out first, counting nothing")
        #expect(
            limits.counting(attemptOn: fresh, eventAsked: true, issuer: "ck_app", clientUserID: "bob", now: t0)
                .failureValue == .unknownEvent)

        var device = device()
        device.sealedTOTPSecret = Data([1])
        device.lastTOTPStep = 10
        let withDevice = CodeState(failures: second.failures, event: pending, device: device)
        let accepted = try CodeLimits.accepting(step: 11, on: withDevice, eventAsked: true, now: t0 + 5).get()
        #expect(accepted.failures == .none && accepted.acceptedStep == 11)
        #expect(
            accepted.event?.storedStatus == .approved && accepted.event?.method == .totp
                && accepted.event?.decidedBy == device.id && accepted.event?.decidedAt == t0 + 5)
        #expect(CodeLimits.accepting(step: 10, on: withDevice, eventAsked: false, now: t0).failureValue == .stepRefused)
        var revoked = device
        revoked.revokedAt = t0
        #expect(
            CodeLimits.accepting(
                step: 11, on: CodeState(failures: .none, event: nil, device: revoked), eventAsked: false, now: t0
            ).failureValue == .stepRefused)
        var decided = pending
        decided.storedStatus = .rejected
        #expect(
            CodeLimits.accepting(
                step: 11, on: CodeState(failures: .none, event: decided, device: device), eventAsked: true, now: t0
            ).failureValue == .eventClosed(decided))
        #expect(
            CodeLimits.accepting(
                step: 11, on: CodeState(failures: .none, event: nil, device: device), eventAsked: true, now: t0
            ).failureValue == .unknownEvent)
    }

    @Test("refresh rotation: a live token rotates within its family; a used one revokes it; an unknown one nothing")
    func refreshRotation() {
        let live = RefreshTokenRecord(
            digest: Data([1]), familyID: "f1", apiKeyID: "ck_app", identityID: "id_1", createdAt: t0 - 5,
            expiresAt: t0 + 100, authTime: t0 - 5)
        let replacement = RefreshTokenRecord(
            digest: Data([2]), familyID: "new", apiKeyID: "ck_app", identityID: "id_1", createdAt: t0,
            expiresAt: t0 + 200)
        guard case .rotated(let next) = RefreshRotation.decide(current: live, replacement: replacement, now: t0) else {
            Issue.record("a live token rotates")
            return
        }
        #expect(next.familyID == "f1" && next.authTime == t0 - 5 && next.digest == Data([2]))
        var used = live
        used.rotatedAt = t0
        guard case .reused(let family) = RefreshRotation.decide(current: used, replacement: replacement, now: t0 + 1)
        else {
            Issue.record("a used token is a reuse")
            return
        }
        #expect(family == "f1")
        guard case .unknown = RefreshRotation.decide(current: live, replacement: replacement, now: t0 + 100) else {
            Issue.record("an expired token is unknown")
            return
        }
    }

    @Test("a requester with the key id alone asks for log-ins and pairings, with no words of its own")
    func requesterPolicy() {
        func refusal(_ name: String, details: Bool = false, ip: Bool = false) -> RequesterPolicy.Refusal? {
            RequesterPolicy.refusal(
                event: name, setsDetails: details, setsIP: ip, setsLocation: false, setsNumberMatching: false)
        }
        #expect(refusal(EventName.login) == nil)
        #expect(refusal(EventName.enrollNewTrustedDevice) == nil)
        #expect(refusal(EventName.transaction) == .eventNeedsSecret)
        #expect(refusal("PAYOUT") == .eventNeedsSecret)
        #expect(refusal(EventName.login, details: true) == .fieldsNeedSecret)
        #expect(refusal(EventName.login, ip: true) == .fieldsNeedSecret)
        #expect(
            RequesterPolicy.refusal(
                event: EventName.login, setsDetails: false, setsIP: false, setsLocation: false,
                setsNumberMatching: false, setsLimitAsRequester: true) == .fieldsNeedSecret,
            "limit_as_requester is the backend's")
    }

    @Test("only the secret's holder hears that a user has no device to ask")
    func noDeviceAnswer() {
        #expect(RequesterPolicy.tellsNoDevice([], callerHoldsSecret: true))
        #expect(RequesterPolicy.tellsNoDevice([device(revoked: true)], callerHoldsSecret: true))
        #expect(!RequesterPolicy.tellsNoDevice([device(revoked: true), device()], callerHoldsSecret: true))
        #expect(!RequesterPolicy.tellsNoDevice([], callerHoldsSecret: false), "the key id alone learns nothing")
    }

    @Test("a pairing is asked by the new machine, names its device and always has its code")
    func pairingRule() {
        let pair = EventName.enrollNewTrustedDevice
        func refusal(_ name: String, device: Bool = false, newDevice: Bool = true, matching: Bool? = nil)
            -> PairingRule.Refusal?
        {
            PairingRule.refusal(event: name, byTrustedDevice: device, newDevice: newDevice, numberMatching: matching)
        }
        #expect(refusal(pair) == nil)
        #expect(refusal(pair, matching: true) == nil)
        #expect(refusal(pair, matching: false) == .codeRequired)
        #expect(refusal(pair, newDevice: false) == .newDeviceMissing)
        #expect(refusal(pair, device: true) == .askedByTrustedDevice)
        #expect(refusal(EventName.login, newDevice: false) == nil)
        #expect(refusal(EventName.login) == .newDeviceOutsidePairing)
    }

    @Test("rates are counted by minute: a bounded read, never shorter than the window, freed a minute at a time")
    func requestRate() {
        let now = Date(timeIntervalSince1970: 60 * 1_000_000 + 30)  // 30 s into minute 1,000,000
        let minute = RequestRate.number(of: now)
        #expect(minute == 1_000_000)
        #expect(RequestRate.oldestCounted(at: now, window: 3600) == minute - 60, "61 minutes touch an hour")
        let minutes = [
            RequestRate.Minute(number: minute - 61, count: 50),  // out of the window: not counted
            RequestRate.Minute(number: minute - 60, count: 2),
            RequestRate.Minute(number: minute - 10, count: 1),
            RequestRate.Minute(number: minute, count: 1),
        ]
        #expect(RequestRate.roomAt(minutes, maximum: 5, window: 3600, now: now) == nil, "4 counted")
        let room = RequestRate.roomAt(minutes, maximum: 4, window: 3600, now: now)
        #expect(room == Date(timeIntervalSince1970: Double(minute - 59) * 60) + 3600, "when minute - 60 leaves")
        #expect(room.map { $0.timeIntervalSince(now) } == 30, "the end of its minute, an hour on")
        let full = RequestRate.roomAt(minutes, maximum: 2, window: 3600, now: now)
        #expect(full == Date(timeIntervalSince1970: Double(minute - 9) * 60) + 3600, "two minutes must leave")
        let verdict = PendingCap.decide(
            PendingCap.Open(sameRequester: [], createdFromAddress: minutes), for: .requester(address: "a"),
            limits: PendingLimits(requestsPerAddress: 4, rateWindow: 3600), now: now)
        #expect(verdict == .refuse(.addressRate, retryAfter: 30))
    }
}

extension Result {
    /// The error, or nil for a success.
    fileprivate var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
