import CountersignCore
import Testing

@Suite("user verification rule")
struct UserVerificationRuleTests {
    @Test(
        "the key's required holds whatever the request says; a request may raise discouraged, never lower required",
        arguments: [
            (UserVerificationPolicy.required, UserVerificationPolicy?.none, true),
            (.required, .discouraged, true),
            (.required, .required, true),
            (.discouraged, nil, false),
            (.discouraged, .discouraged, false),
            (.discouraged, .required, true),
        ])
    func requires(key: UserVerificationPolicy, requested: UserVerificationPolicy?, expected: Bool) {
        #expect(UserVerificationRule.requires(key: key, requested: requested) == expected)
    }

    @Test("a trusted device's own request is approved by itself only when it needs no user verification")
    func ownRequest() {
        #expect(UserVerificationRule.ownRequest(requiresUserVerification: false) == .approvedByItself)
        #expect(UserVerificationRule.ownRequest(requiresUserVerification: true) == .pending)
    }
}

@Suite("account changes under the user-verification policy")
struct AccountChangeRuleTests {
    @Test("only a required key makes recovery codes and removals wait for the owner")
    func rule() {
        #expect(UserVerificationRule.accountChangeNeedsOwner(key: .required))
        #expect(!UserVerificationRule.accountChangeNeedsOwner(key: .discouraged))
    }
}
