import CountersignBroker
import CountersignCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// Send limits of the hosted page, and what it shows before a code is sent.
@Suite("email/phone verification: send limits and the first page")
struct VerificationLimitTests {
    typealias Flow = VerificationFlowTests.Flow

    /// Asks for a code to `email`; returns the status and the page.
    func requestCode(_ flow: Flow, _ client: some TestClientProtocol, email: String) async throws
        -> (HTTPResponse.Status, String)
    {
        try await client.execute(
            uri: "/app/code", method: .post, headers: Flow.formHeaders,
            body: flow.form([
                "api_key": flow.broker.apiKeyID, "redirect_url": VerificationFlowTests.redirect, "type": "EMAIL",
                "code_challenge": flow.challenge, "identifier": email,
            ])
        ) { ($0.status, String(buffer: $0.body)) }
    }

    @Test("one address gets at most 5 challenges per 15 minutes, then 429 and no code; later it may again")
    func perIdentifier() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            for _ in 1...5 {
                let (status, _) = try await requestCode(flow, client, email: "bob@example.com")
                #expect(status == .ok)
            }
            let (status, page) = try await requestCode(flow, client, email: "bob@example.com")
            #expect(status == .tooManyRequests)
            #expect(page.contains("Too many codes were sent. Try again in"))
            #expect(page.contains(#"value="bob@example.com""#), "what was typed stays in the field")
            #expect(flow.sender.count == 5)
            flow.broker.clock.advance(by: 901)
            #expect(try await requestCode(flow, client, email: "bob@example.com").0 == .ok)
            #expect(flow.sender.count == 6)
        }
    }

    @Test("one client address starts at most 20 challenges per 15 minutes, whatever the identifiers")
    func perClientAddress() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            for index in 1...20 {
                #expect(try await requestCode(flow, client, email: "user\(index)@example.com").0 == .ok)
            }
            let (status, page) = try await requestCode(flow, client, email: "user21@example.com")
            #expect(status == .tooManyRequests)
            #expect(page.contains("Too many codes were sent."))
            #expect(flow.sender.count == 20)
            #expect(flow.sender.lastCode(to: "user21@example.com") == nil)
        }
    }

    @Test("login_hint prefills the field, escaped")
    func loginHint() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            let hint = #"carol@example.com"><script>alert(1)</script>"#
            var uri = URLComponents(string: flow.pageURI())!
            uri.queryItems! += [URLQueryItem(name: "login_hint", value: hint)]
            try await client.execute(uri: uri.string!, method: .get) { response in
                #expect(response.status == .ok)
                let page = String(buffer: response.body)
                #expect(page.contains(#"value="carol@example.com&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;""#))
                #expect(!page.contains("<script>"))
            }
        }
    }
}
