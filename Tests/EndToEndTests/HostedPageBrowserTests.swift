import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// The hosted verification page, completed by a real headless Chromium
/// against the real broker process.
@Suite("end to end: the hosted page in a real browser", .serialized)
struct HostedPageBrowserTests {
    /// The last code the development sender wrote to the outbox for `identifier`.
    func code(in broker: LiveBroker, for identifier: String) async throws -> String {
        let outbox = broker.dataDirectory.appendingPathComponent("outbox.jsonl")
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOf: outbox, encoding: .utf8) {
                let lines = text.split(separator: "\n").compactMap {
                    try? JSONDecoder().decode([String: String].self, from: Data($0.utf8))
                }
                if let line = lines.last(where: { $0["to"] == identifier }), let code = line["code"] { return code }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ProcessFailure("no code for \(identifier) in \(outbox.path)")
    }

    @Test("fill the email, read the code from the development sender, land on the redirect with code and state")
    func completesInBrowser() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        // The broker's own health endpoint stands in for the app's loopback listener.
        let redirect = broker.url + "/healthz"
        let register = try RunningProcess(
            "device-broker",
            [
                "apikey", "set-redirect-urls", broker.apiKeyID, "http://127.0.0.1/healthz", "--data-dir",
                broker.dataDirectory.path,
            ])
        #expect(try await register.exitCode() == 0, "\(register.text)")

        let verifier = PKCE.newVerifier()
        var components = URLComponents(string: broker.url + "/app")!
        components.queryItems = [
            .init(name: "api_key", value: broker.apiKeyID), .init(name: "redirect_url", value: redirect),
            .init(name: "type", value: "EMAIL"), .init(name: "code_challenge", value: PKCE.challenge(for: verifier)),
            .init(name: "state", value: "st-42"),
        ]
        let browser = try await WebDriver.start()
        do {
            try await browser.open(components.string!)
            #expect(try await browser.source.contains("Verify your email"))
            try await browser.type("Alice@Example.com", into: "#identifier")
            try await browser.click("button[type=submit]")
            try await browser.waitFor(text: "We sent a 6-digit code to <strong>alice@example.com</strong>")
            let code = try await code(in: broker, for: "alice@example.com")
            let wrong = code == "000000" ? "111111" : "000000"
            try await browser.type(wrong, into: "#code")
            try await browser.click("form[action='/app/verify'] button")
            try await browser.waitFor(text: "4 tries left")
            try await browser.type(code, into: "#code")
            try await browser.click("form[action='/app/verify'] button")

            // The click returns before a form's redirect has always landed.
            var landed = try await browser.currentURL
            let deadline = ContinuousClock.now + .seconds(15)
            while !landed.hasPrefix(redirect + "?"), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                landed = try await browser.currentURL
            }
            #expect(landed.hasPrefix(redirect + "?"))
            let items = URLComponents(string: landed)?.queryItems ?? []
            func value(_ name: String) -> String? { items.first { $0.name == name }?.value }
            #expect(value("state") == "st-42")
            let authorizationCode = try #require(value("code"))
            let challengeID = try #require(value("challenge_id"))

            // The app's back channel: the seed's exchange, by plain HTTP.
            let identity = try await LiveHTTP.postJSON(
                broker.url + "/api/v0/verify/get_identity?oauth_token=true", headers: ["API_KEY_ID": broker.apiKeyID],
                body: [
                    "code_verifier": verifier, "authorization_code": authorizationCode,
                    "challenge_id": Int64(challengeID)!, "redirect_url": redirect,
                ])
            #expect(identity.status == 200, "\(identity.json)")
            let identifier = identity.json["identifier"] as? [String: Any]
            #expect(identifier?["identifier"] as? String == "alice@example.com")
            #expect((identifier?["device_name"] as? String)?.contains("Chrome") == true)
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }
}

/// A standard OAuth client library of another ecosystem runs the flow.
@Suite("end to end: a standard OAuth client library")
struct OAuthClientLibraryTests {
    @Test("Python's authlib: authorize with PKCE and nonce, token, ID token verified with the JWKS, refresh")
    func authlib() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let register = try RunningProcess(
            "device-broker",
            [
                "apikey", "set-redirect-urls", broker.apiKeyID, "http://127.0.0.1/callback", "--data-dir",
                broker.dataDirectory.path,
            ])
        #expect(try await register.exitCode() == 0, "\(register.text)")
        let script = scriptsDirectory.appendingPathComponent("oauth-client-check.py")
        let python = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", script.path, broker.url, broker.apiKeyID, "http://127.0.0.1:8765/callback",
                broker.dataDirectory.appendingPathComponent("outbox.jsonl").path, "Carol@Example.com",
            ])
        #expect(try await python.exitCode(timeout: .seconds(60)) == 0, "\(python.text)")
        #expect(python.text.contains(#""email": "carol@example.com""#))
    }
}

/// Plain JSON over HTTP, as any client would send it.
enum LiveHTTP {
    static func postJSON(_ url: String, headers: [String: String], body: [String: Any]) async throws
        -> (status: Int, json: [String: Any])
    {
        try await request(.POST, url, headers: headers, body: body)
    }

    static func request(
        _ method: HTTPMethod, _ url: String, headers: [String: String] = [:], body: [String: Any]? = nil
    ) async throws -> (status: Int, json: [String: Any]) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let data = Data(try await response.body.collect(upTo: 16 * 1024 * 1024).readableBytesView)
        return (Int(response.status.code), (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:])
    }
}
