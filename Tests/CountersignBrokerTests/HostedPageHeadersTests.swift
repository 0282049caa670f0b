import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

/// Every page the broker hosts for a person's browser (the verification
/// page, the sign-in page, end-session, and their error pages) says who
/// may hear its address and frame it: `Referrer-Policy: same-origin`, so
/// that its own forms still carry their `Origin` (under `no-referrer` a
/// browser sends `Origin: null`) while no other site learns the page's
/// URL with its parameters.
@Suite("hosted pages: referrer policy, framing and caching headers")
struct HostedPageHeadersTests {
    static let challenge = PKCE.challenge(for: PKCE.newVerifier())

    @Test("on the verification, sign-in and end-session pages, and on each of their errors")
    func everyPage() async throws {
        let broker = try await TestBroker()
        let signIn = try await broker.addAPIKey(name: "Sign-in")
        for key in [broker.apiKeyID, signIn.id] {
            try await broker.store.setRedirectURLs(["http://127.0.0.1/cb"], apiKeyID: key)
        }
        try await broker.store.setOpenIDClient(
            OpenIDClientRegistration(scopes: ["openid"]), apiKeyID: signIn.id, now: broker.clock.now)
        let pkce = "code_challenge=\(Self.challenge)&code_challenge_method=S256"
        let pages = [
            "/app?api_key=\(broker.apiKeyID)&redirect_url=http://127.0.0.1/cb&type=EMAIL&\(pkce)",
            "/app?api_key=ck_unknown&redirect_url=http://127.0.0.1/cb&type=EMAIL&\(pkce)",
            "/oauth/authorize?client_id=\(signIn.id)&redirect_uri=http://127.0.0.1/cb&response_type=code"
                + "&scope=openid&\(pkce)",
            "/oauth/authorize?client_id=\(signIn.id)&redirect_uri=https://elsewhere.example/cb",
            "/oauth/sign-in?id=ev_unknown",
            "/oauth/end-session",
        ]
        try await broker.test { client in
            for page in pages {
                let response = try await client.execute(uri: page, method: .get)
                #expect(response.headers[.contentType]?.hasPrefix("text/html") == true, "\(page)")
                #expect(response.headers[HTTPField.Name("Referrer-Policy")!] == "same-origin", "\(page)")
                #expect(response.headers[HTTPField.Name("X-Frame-Options")!] == "DENY", "\(page)")
                #expect(response.headers[.cacheControl] == "no-store", "\(page)")
                #expect(response.headers[.xContentTypeOptions] == "nosniff", "\(page)")
            }
        }
    }
}
