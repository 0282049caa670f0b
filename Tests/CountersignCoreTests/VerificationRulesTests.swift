import CountersignCore
import Foundation
import Testing

@Suite("PKCE, redirect URLs and one-time codes")
struct VerificationRulesTests {
    @Test("RFC 7636 Appendix B: the S256 challenge of the example verifier")
    func rfc7636() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        #expect(PKCE.challenge(for: verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(PKCE.verify(verifier: verifier, challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"))
        #expect(!PKCE.verify(verifier: verifier, challenge: PKCE.challenge(for: PKCE.newVerifier())))
    }

    @Test("verifiers: 43 to 128 unreserved characters only")
    func verifierShape() {
        #expect(PKCE.isValidVerifier(String(repeating: "a", count: 43)))
        #expect(PKCE.isValidVerifier(String(repeating: "~", count: 128)))
        #expect(!PKCE.isValidVerifier(String(repeating: "a", count: 42)), "too short")
        #expect(!PKCE.isValidVerifier(String(repeating: "a", count: 129)), "too long")
        #expect(!PKCE.isValidVerifier(String(repeating: "a", count: 42) + "+"), "outside the charset")
        #expect(!PKCE.isValidVerifier(String(repeating: "é", count: 43)), "not ASCII")
        // A challenge used as its own verifier ("plain") does not verify.
        let challenge = PKCE.challenge(for: PKCE.newVerifier())
        #expect(!PKCE.verify(verifier: challenge, challenge: challenge))
    }

    @Test(
        "registering redirect URLs",
        arguments: [
            ("https://app.example/callback", nil),
            ("http://127.0.0.1/callback", nil),
            ("http://[::1]:8123/cb", nil),
            ("com.example.app:/oauth2redirect", nil),
            ("com.example.app://callback", nil),
            ("http://app.example/callback", RedirectURL.Problem.insecureHTTP),
            ("http://localhost:8080/cb", .insecureHTTP),
            ("https://app.example/cb#frag", .fragment),
            ("my_app://callback", .badScheme),
            ("myapp://callback", .badScheme),
            ("javascript:alert(1)", .dangerousScheme),
            ("data:text/html,hi", .dangerousScheme),
            ("/relative/path", .notAURL),
        ])
    func registering(_ url: String, _ problem: RedirectURL.Problem?) {
        #expect(RedirectURL.problem(registering: url) == problem)
    }

    @Test("matching: exact, except the port of a loopback URL")
    func matching() {
        let registered = ["https://app.example/cb", "http://127.0.0.1/cli", "com.example.app:/done"]
        #expect(RedirectURL.isAllowed("https://app.example/cb", registered: registered))
        #expect(RedirectURL.isAllowed("http://127.0.0.1:49152/cli", registered: registered))
        #expect(RedirectURL.isAllowed("com.example.app:/done", registered: registered))
        #expect(!RedirectURL.isAllowed("https://app.example/cb/", registered: registered), "trailing slash")
        #expect(!RedirectURL.isAllowed("https://app.example/cb?x=1", registered: registered), "added query")
        #expect(!RedirectURL.isAllowed("https://APP.example/cb", registered: registered), "not byte-equal")
        #expect(!RedirectURL.isAllowed("http://127.0.0.1:49152/other", registered: registered), "other path")
        #expect(!RedirectURL.isAllowed("https://evil.example/cb", registered: registered))
        #expect(!RedirectURL.isAllowed("https://app.example/cb", registered: []))
    }

    @Test("redirect parameters are added to the query and escaped")
    func appending() {
        let url = RedirectURL.appending(
            [URLQueryItem(name: "code", value: "a+b/c"), URLQueryItem(name: "state", value: "x y&z")],
            to: "com.example.app:/done?keep=1")
        #expect(url == "com.example.app:/done?keep=1&code=a%2Bb/c&state=x%20y%26z")
    }

    @Test("one-time codes: six digits, digests bound to the challenge")
    func codes() {
        let codes = (0..<200).map { _ in OneTimeCode.generate() }
        #expect(codes.allSatisfy { $0.count == 6 && $0.allSatisfy(\.isNumber) })
        #expect(Set(codes).count > 190)
        #expect(OneTimeCode.digest("123456", challengeID: "a") != OneTimeCode.digest("123456", challengeID: "b"))
    }

    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func challenge(
        failed: Int = 0, sends: Int = 1, verified: Bool = false, authorizationCode: Data? = nil, redeemed: Bool = false
    ) -> VerificationChallenge {
        VerificationChallenge(
            id: 7, apiKeyID: "ck_app", identifierType: .email, identifier: "a@example.com", codeDigest: Data([1]),
            codeExpiresAt: t0 + 300, codeChallenge: "c", redirectURL: "https://app.example/cb", state: nil,
            createdAt: t0, failedAttempts: failed, sends: sends, verifiedAt: verified ? t0 + 1 : nil,
            authorizationCodeDigest: authorizationCode,
            authorizationCodeExpiresAt: authorizationCode.map { _ in t0 + 600 },
            redeemedAt: redeemed ? t0 + 2 : nil, userAgent: "test", ip: "192.0.2.1")
    }

    @Test("a verification's steps: resend, submit and redeem, each with the reason it refuses")
    func steps() {
        let t0 = Self.t0
        #expect(VerificationRules.resend(nil, maxSends: 3, maxAttempts: 5, now: t0) == .refused(.unknownChallenge))
        #expect(VerificationRules.resend(Self.challenge(), maxSends: 3, maxAttempts: 5, now: t0) == .resend)
        #expect(
            VerificationRules.resend(Self.challenge(sends: 3), maxSends: 3, maxAttempts: 5, now: t0 + 100)
                == .refused(.sentTooOften(maxSends: 3, retryAfter: 200)))
        #expect(
            VerificationRules.resend(Self.challenge(failed: 5), maxSends: 3, maxAttempts: 5, now: t0)
                == .refused(.finished))

        let open = Self.challenge()
        #expect(VerificationRules.submit(open, codeDigest: Data([1]), maxAttempts: 5, now: t0) == .verify)
        #expect(VerificationRules.submit(open, codeDigest: Data([2]), maxAttempts: 5, now: t0) == .countFailure)
        #expect(
            VerificationRules.submit(open, codeDigest: Data([1]), maxAttempts: 5, now: t0 + 300) == .refused(.finished))
        #expect(
            VerificationRules.submit(Self.challenge(verified: true), codeDigest: Data([1]), maxAttempts: 5, now: t0)
                == .refused(.finished))

        let verified = Self.challenge(verified: true, authorizationCode: Data([9]))
        #expect(VerificationRules.redeem(verified, digest: Data([9]), now: t0 + 10) == .redeem)
        #expect(VerificationRules.redeem(verified, digest: Data([8]), now: t0 + 10) == .refused(.unknownCode))
        #expect(VerificationRules.redeem(verified, digest: Data([9]), now: t0 + 600) == .refused(.usedOrExpired))
        #expect(
            VerificationRules.redeem(
                Self.challenge(verified: true, authorizationCode: Data([9]), redeemed: true), digest: Data([9]),
                now: t0 + 10) == .refused(.usedOrExpired))
    }

    @Test("starting verifications: per identifier and per address within the window, with the wait until room")
    func starts() {
        let t0 = Self.t0
        let limits = ChallengeLimits(perIdentifier: 2, perAddress: 3, window: 3600)
        #expect(limits.decide(recentByIdentifier: [t0], recentByAddress: [t0], now: t0 + 1) == .admit)
        #expect(
            limits.decide(recentByIdentifier: [t0 + 100, t0], recentByAddress: [], now: t0 + 200)
                == .refuse(.identifier, retryAfter: 3400))
        #expect(
            limits.decide(recentByIdentifier: [], recentByAddress: [t0, t0 + 10, t0 + 20], now: t0 + 20)
                == .refuse(.address, retryAfter: 3580))
    }
}
