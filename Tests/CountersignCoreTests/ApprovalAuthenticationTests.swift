import CountersignCore
import Foundation
import Testing

/// How an approval is named to backends: `acr` and RFC 8176 `amr`.
@Suite("approval authentication: acr and amr")
struct ApprovalAuthenticationTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func event(_ method: AuthMethod, status: EventStatus = .approved, passkey: Bool = false) -> ApprovalEvent {
        ApprovalEvent(
            id: "ev_1", createdAt: t0, updatedAt: t0, issuer: "ck_app", clientUserID: "alice", name: "LOGIN",
            ip: "127.0.0.1", location: "Unknown", method: method, storedStatus: status, expiresAt: t0 + 60,
            details: nil, requesterName: nil, nonce: "n", matchNumber: nil, wrongMatches: 0,
            requesterTokenDigest: nil, decidedBy: "dev", decidedAt: t0, decision: "jws",
            assertion: passkey
                ? PasskeyAssertion(credentialID: "c", authenticatorData: "a", clientDataJSON: "d", signature: "s")
                : nil)
    }

    @Test("a device key, a device key with its passkey, a code: each named for what it proves")
    func classes() {
        let device = ApprovalAuthentication(of: event(.trustedDevice))
        #expect(device.acr == ApprovalAuthentication.deviceACR && device.amr == ["swk"])
        let passkey = ApprovalAuthentication(of: event(.trustedDevice, passkey: true))
        #expect(passkey.acr == ApprovalAuthentication.passkeyACR && passkey.amr == ["swk", "hwk", "user", "mfa"])
        let code = ApprovalAuthentication(of: event(.totp))
        #expect(code.acr == ApprovalAuthentication.totpACR && code.amr == ["otp"])
        // amr follows from the stored acr alone (a refresh token keeps only that).
        #expect(ApprovalAuthentication(acr: passkey.acr) == passkey)
    }

    @Test("the event's document and token say it once approved, and nothing otherwise")
    func documents() {
        let approved = EventDocument(event(.trustedDevice, passkey: true), now: t0, signature: nil)
        #expect(approved.acr == ApprovalAuthentication.passkeyACR && approved.amr?.contains("mfa") == true)
        let token = EventTokenClaims(event: event(.trustedDevice, passkey: true), issuer: "x", now: t0, lifetime: 60)
        #expect(token.acr == ApprovalAuthentication.passkeyACR && token.amr == approved.amr)
        let rejected = EventDocument(event(.trustedDevice, status: .rejected), now: t0, signature: nil)
        #expect(rejected.acr == nil && rejected.amr == nil)
        #expect(
            EventTokenClaims(event: event(.trustedDevice, status: .rejected), issuer: "x", now: t0, lifetime: 60)
                .acr == nil)
    }

    @Test("acr_values ask for user verification only by naming the passkey class")
    func acrValues() {
        #expect(ApprovalAuthentication.requiresUserVerification(acrValues: ApprovalAuthentication.passkeyACR))
        #expect(
            ApprovalAuthentication.requiresUserVerification(
                acrValues: "\(ApprovalAuthentication.deviceACR) \(ApprovalAuthentication.passkeyACR)"))
        #expect(!ApprovalAuthentication.requiresUserVerification(acrValues: ApprovalAuthentication.deviceACR))
        #expect(!ApprovalAuthentication.requiresUserVerification(acrValues: nil))
        #expect(!ApprovalAuthentication.requiresUserVerification(acrValues: "urn:countersign:acr:passkey2"))
    }
}

@Suite("which events a code may settle")
struct CodeFinishRuleTests {
    @Test("a LOGIN, unless it requires its owner verified; under a required key nothing is recorded")
    func rule() {
        let base = ApprovalAuthenticationTests()
        var login = base.event(.trustedDevice, status: .pending)
        #expect(CodeFinishRule.refusal(for: login) == nil)
        login.userVerification = true
        #expect(CodeFinishRule.refusal(for: login) == .userVerificationRequired)
        var transaction = base.event(.trustedDevice, status: .pending)
        transaction.name = EventName.transaction
        #expect(CodeFinishRule.refusal(for: transaction) == .notALogin)
        #expect(CodeFinishRule.refusal(recordingUnder: .required) == .userVerificationRequired)
        #expect(CodeFinishRule.refusal(recordingUnder: .discouraged) == nil)
    }
}
