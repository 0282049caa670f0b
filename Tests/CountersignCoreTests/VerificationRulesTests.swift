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
}
