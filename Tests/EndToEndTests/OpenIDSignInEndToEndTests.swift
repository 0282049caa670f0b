import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Sign-in to an OpenID Connect relying party by approval, against a
/// relying party written with authlib and joserfc (scripts/oidc-rp-check.py),
/// with the real broker and a real `device-agent` answering.
@Suite("end to end: sign in to an OpenID Connect app by approval", .serialized)
struct OpenIDSignInEndToEndTests {
    static let redirectURI = "http://127.0.0.1:8765/callback"

    /// A broker whose demo app registered the relying party's redirect URI
    /// and, unless `signsIn` is false, its sign-in scopes.
    static func broker(_ arguments: [String] = [], database: String? = nil, signsIn: Bool = true) async throws
        -> LiveBroker
    {
        let broker = try await LiveBroker.start(arguments: arguments, database: database)
        try await command(broker, ["apikey", "set-redirect-urls", broker.apiKeyID, redirectURI])
        if signsIn { try await command(broker, ["apikey", "set-openid-scopes", broker.apiKeyID, "openid", "profile"]) }
        return broker
    }

    /// `device-broker ARGUMENTS` on the broker's store; its output.
    @discardableResult
    static func command(_ broker: LiveBroker, _ arguments: [String]) async throws -> String {
        let process = try RunningProcess("device-broker", arguments + broker.storeArguments)
        #expect(try await process.exitCode(timeout: .seconds(120)) == 0, "\(process.text)")
        return process.text
    }

    /// An authorization request of the demo app, with `extra` parameters.
    static func authorizeURL(_ broker: LiveBroker, _ extra: [String: String] = [:]) -> String {
        var url = URLComponents(string: broker.url + "/oauth/authorize")!
        url.queryItems =
            [
                .init(name: "response_type", value: "code"), .init(name: "client_id", value: broker.apiKeyID),
                .init(name: "redirect_uri", value: redirectURI), .init(name: "scope", value: "openid"),
                .init(name: "code_challenge", value: PKCE.challenge(for: PKCE.newVerifier())),
                .init(name: "code_challenge_method", value: "S256"),
            ] + extra.map { URLQueryItem(name: $0.key, value: $0.value) }
        return url.string!
    }

    /// A GET's status and body.
    static func get(_ url: String) async throws -> (Int, String) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    @Test("the page is the app's choice: a request cannot turn sign-in into verification, nor the reverse")
    func flowIsTheApps() async throws {
        let broker = try await Self.broker()
        defer { broker.stop() }
        // Registered: sign-in, whatever the request adds.
        for extra in [[:], ["identifier_type": "EMAIL"], ["scope": "openid email phone"]] {
            let (status, page) = try await Self.get(Self.authorizeURL(broker, extra))
            #expect(status == 200 && page.contains(#"name="user""#), "\(extra): \(page)")
            #expect(!page.contains("/app/code"), "\(extra)")
        }
        let (refused, page) = try await Self.get(
            broker.url + "/app?api_key=\(broker.apiKeyID)&redirect_url=\(Self.redirectURI)&type=EMAIL"
                + "&code_challenge=\(PKCE.challenge(for: PKCE.newVerifier()))&code_challenge_method=S256")
        #expect(refused == 400 && page.contains("signs in by approval"), "\(page)")

        // Not registered: the verification page, even for openid alone.
        try await Self.command(broker, ["apikey", "set-openid-scopes", broker.apiKeyID])
        let (status, verification) = try await Self.get(Self.authorizeURL(broker))
        #expect(status == 200 && verification.contains("/app/code") && !verification.contains(#"name="user""#))
    }

    /// The relying party, signing `user` in with `options`.
    static func relyingParty(_ broker: LiveBroker, user: String = "alice", _ options: [String] = []) throws
        -> RunningProcess
    {
        try RunningProcess(
            "/usr/bin/env",
            [
                "python3", scriptsDirectory.appendingPathComponent("oidc-rp-check.py").path, broker.url,
                broker.apiKeyID, broker.apiSecret, redirectURI, user,
            ] + options)
    }

    /// The JSON object the relying party printed last.
    static func result(of process: RunningProcess) throws -> [String: Any] {
        let line = try #require(process.text.split(separator: "\n").last { $0.hasPrefix("{") }, "\(process.text)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    /// The device answers the waiting login: `answer` (y, n or f), then
    /// the number the page shows.
    static func answer(
        _ broker: LiveBroker, _ relyingParty: RunningProcess, device: URL, with answer: String = "y"
    ) async throws {
        let number = try await relyingParty.waitFor(#"number: (\d+)"#, timeout: .seconds(120))
        let agent = try broker.agent(
            ["approve", "--timeout", "60"], configDirectory: device, stdin: "\(answer)\n\(number)\n")
        #expect(try await agent.exitCode(timeout: .seconds(120)) == 0, "\(agent.text)")
    }

    @Test("a confidential client (Basic): approved on a CLI device; ID token, userinfo, refresh, logout")
    func approvedConfidential() async throws {
        let broker = try await Self.broker()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let rp = try Self.relyingParty(broker, ["--auth", "basic"])
        try await Self.answer(broker, rp, device: laptop)
        #expect(try await rp.exitCode(timeout: .seconds(120)) == 0, "\(rp.text)")
        let outcome = try Self.result(of: rp)
        #expect(outcome["outcome"] as? String == "tokens", "\(outcome)")
        let claims = try #require(outcome["claims"] as? [String: Any])
        let sub = OpenIDSubject.of(apiKeyID: broker.apiKeyID, user: "alice")
        #expect(claims["sub"] as? String == sub, "the sub is the app's, not the user name")
        #expect(claims["preferred_username"] as? String == "alice")
        #expect(claims["acr"] as? String == ApprovalAuthentication.deviceACR)
        #expect(claims["amr"] as? [String] == ["swk"])
        #expect((claims["sid"] as? String)?.hasPrefix("ev_") == true)
        #expect(outcome["scope"] as? String == "openid profile")
        let userinfo = try #require(outcome["userinfo"] as? [String: Any], "\(outcome)")
        #expect(userinfo["sub"] as? String == sub && userinfo["preferred_username"] as? String == "alice")
        #expect(outcome["userinfo_by_post_header"] as? String == sub, "userinfo by POST: \(outcome)")
        #expect(outcome["userinfo_by_body"] as? String == sub, "RFC 6750 §2.2, the token in a form: \(outcome)")
        #expect(outcome["second_redemption"] as? String == "invalid_grant", "a code works once")
        #expect(
            outcome["refreshed_sub"] as? String == sub
                && outcome["refreshed_sid"] as? String == claims["sid"] as? String)
        #expect(outcome["logout"] as? Int == 303 && outcome["logout_state"] as? String == "bye")
        #expect(outcome["refresh_after_logout"] as? String == "invalid_grant")
        #expect(outcome["userinfo_after_logout"] as? Int == 401)
        #expect(outcome["wrong_redirect"] as? Int == 400 && outcome["wrong_redirect_location"] is NSNull)
        let events = try await broker.backend.events(user: "alice")
        #expect(events.count == 1 && events.allSatisfy { $0.channel == .openid }, "\(events)")
    }

    @Test("a confidential app's code is refused without its secret (RFC 6749 §3.2.1), and is not spent")
    func confidentialWithoutSecret() async throws {
        let broker = try await Self.broker()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        // As a thief holding the code and the verifier, or an app that
        // forgot its secret: client_id and PKCE alone.
        let rp = try Self.relyingParty(broker, ["--auth", "none"])
        try await Self.answer(broker, rp, device: laptop)
        #expect(try await rp.exitCode(timeout: .seconds(120)) == 0, "\(rp.text)")
        let outcome = try Self.result(of: rp)
        #expect(outcome["outcome"] as? String == "token_error", "\(outcome)")
        #expect(outcome["error"] as? String == "invalid_client", "\(outcome)")
        #expect((outcome["error_description"] as? String)?.contains("--public") == true, "\(outcome)")
        #expect(outcome["redeemed_with_secret"] as? Bool == true, "the refusal spent nothing: \(outcome)")
    }

    @Test("a public client (no secret, PKCE alone) and a confidential one by post both sign in")
    func publicAndPost() async throws {
        let broker = try await Self.broker()
        defer { broker.stop() }
        try await Self.command(
            broker, ["apikey", "set-openid-scopes", broker.apiKeyID, "openid", "profile", "--public"])
        let laptop = try await broker.enrollMachine(name: "laptop")
        // The first sends no nonce (optional in the code flow); the second
        // asks by POST, which OpenID Connect Core §3.1.2.1 requires too.
        for (auth, options) in [("none", ["--no-nonce"]), ("post", ["--authorize-by-post"])] {
            let rp = try Self.relyingParty(broker, ["--auth", auth] + options)
            try await Self.answer(broker, rp, device: laptop)
            #expect(try await rp.exitCode(timeout: .seconds(120)) == 0, "\(rp.text)")
            let outcome = try Self.result(of: rp)
            #expect(outcome["outcome"] as? String == "tokens", "\(auth): \(outcome)")
            #expect(outcome["refresh_after_logout"] as? String == "invalid_grant", "\(auth): \(outcome)")
        }
    }

    @Test("a code spent twice: refused, and the sign-in it bought ends, its access token with it")
    func codeSpentTwice() async throws {
        let broker = try await Self.broker()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let rp = try Self.relyingParty(broker, ["--spend-code-twice"])
        try await Self.answer(broker, rp, device: laptop)
        #expect(try await rp.exitCode(timeout: .seconds(120)) == 0, "\(rp.text)")
        let outcome = try Self.result(of: rp)
        #expect(outcome["outcome"] as? String == "tokens", "\(outcome)")
        #expect(outcome["second_redemption"] as? String == "invalid_grant")
        #expect(outcome["userinfo_after_reuse"] as? Int == 401, "\(outcome)")
        #expect(outcome["refresh_after_reuse"] as? String == "invalid_grant", "\(outcome)")
    }

    @Test("an app that registered openid profile email signs in with the scope most apps ask for")
    func registeredScopes() async throws {
        let broker = try await Self.broker()
        defer { broker.stop() }
        let user = "alice@example.com"
        let registered = try await Self.command(
            broker, ["apikey", "set-openid-scopes", broker.apiKeyID, "openid", "profile", "email"])
        #expect(registered.contains("signs in by approval with openid profile email"), "\(registered)")
        let laptop = try await broker.enrollMachine(user: user, name: "laptop")
        let rp = try Self.relyingParty(broker, user: user, ["--scope", "openid email profile"])
        let number = try await rp.waitFor(#"number: (\d+)"#, timeout: .seconds(120))
        let agent = try broker.agent(
            ["approve", "--timeout", "60"], configDirectory: laptop, user: user, stdin: "y\n\(number)\n")
        #expect(try await agent.exitCode(timeout: .seconds(120)) == 0, "\(agent.text)")
        #expect(try await rp.exitCode(timeout: .seconds(120)) == 0, "\(rp.text)")
        let outcome = try Self.result(of: rp)
        #expect(outcome["scope"] as? String == "openid profile email", "\(outcome)")
        let claims = try #require(outcome["claims"] as? [String: Any], "\(outcome)")
        #expect(claims["email"] as? String == user && claims["email_verified"] as? Bool == false)
        let userinfo = try #require(outcome["userinfo"] as? [String: Any], "\(outcome)")
        #expect(userinfo["email"] as? String == user && userinfo["preferred_username"] as? String == user)

        // An unknown scope is refused at the command line, and nothing changes.
        let wrong = try RunningProcess(
            "device-broker",
            ["apikey", "set-openid-scopes", broker.apiKeyID, "openid", "phone"] + broker.storeArguments)
        #expect(try await wrong.exitCode(timeout: .seconds(120)) != 0)
        #expect(wrong.text.contains("phone is not a scope the broker gives"), "\(wrong.text)")
    }

    @Test("the database away: the page says to try again (503, HTML); back, the sign-in works")
    func storeOutage() async throws {
        let cluster = try await ThrowawayCluster.start()
        let outcome = await Result {
            let broker = try await Self.broker(database: cluster.url)
            defer { broker.stop() }
            let laptop = try await broker.enrollMachine(name: "laptop")
            let authorize = Self.authorizeURL(broker)
            try await cluster.halt()
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: authorize), timeout: .seconds(60))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
            #expect(response.status.code == 503, "\(response.status)")
            #expect(response.headers.first(name: "Content-Type")?.hasPrefix("text/html") == true)
            #expect(response.headers.first(name: "Retry-After") != nil)
            #expect(body.contains("try again in a few seconds"), "\(body)")
            try await cluster.resume()

            // The page answers again once the store does; the sign-in completes.
            var patience = WaitBudget(.seconds(90))
            while patience.left() {
                if try await Self.get(authorize).0 == 200 { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            let rp = try Self.relyingParty(broker)
            try await Self.answer(broker, rp, device: laptop)
            #expect(try await rp.exitCode(timeout: .seconds(120)) == 0, "\(rp.text)")
            #expect(try Self.result(of: rp)["outcome"] as? String == "tokens")
        }
        await cluster.remove()
        try outcome.get()
    }

    @Test("refused on the device, reported as not mine, or unanswered: access_denied with state and iss")
    func refusals() async throws {
        let broker = try await Self.broker(["--approval-window", "4s"])
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        for (answer, words) in [("n", "refused on your device"), ("f", "reported on your device as not yours")] {
            let rp = try Self.relyingParty(broker)
            try await Self.answer(broker, rp, device: laptop, with: answer)
            #expect(try await rp.exitCode(timeout: .seconds(120)) == 0, "\(rp.text)")
            let outcome = try Self.result(of: rp)
            #expect(outcome["outcome"] as? String == "error" && outcome["error"] as? String == "access_denied")
            #expect((outcome["page"] as? String)?.contains(words) == true, "\(outcome)")
        }
        // Nobody answers bob's sign-in in its window.
        let rp = try Self.relyingParty(broker, user: "bob")
        #expect(try await rp.exitCode(timeout: .seconds(120)) == 0, "\(rp.text)")
        let outcome = try Self.result(of: rp)
        #expect(outcome["outcome"] as? String == "error" && outcome["error"] as? String == "access_denied")
        #expect(outcome["status"] as? String == "expired")
        #expect((outcome["page"] as? String)?.contains("in time") == true, "\(outcome)")
    }
}
