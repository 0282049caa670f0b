import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// The app, browser and device helpers of ``OpenIDSignInBrowserTests``.
extension OpenIDSignInBrowserTests {
    /// An app (an API key) the browser signs in to, and the loopback port
    /// its relying party listens on for its redirect URI.
    struct App {
        let id: String
        let secret: String
        let port: Int

        var redirectURI: String { "http://127.0.0.1:\(port)/callback" }
    }

    /// `device-broker ARGUMENTS` on the broker's store; its output.
    @discardableResult
    static func command(_ broker: LiveBroker, _ arguments: [String]) async throws -> String {
        let process = try RunningProcess("device-broker", arguments + broker.storeArguments)
        guard try await process.exitCode(timeout: .seconds(120)) == 0 else {
            throw ProcessFailure("device-broker \(arguments.joined(separator: " ")) failed: \(process.text)")
        }
        return process.text
    }

    /// Makes `app` sign in by approval: registers its scopes.
    static func signsIn(_ broker: LiveBroker, _ app: App) async throws {
        try await command(broker, ["apikey", "set-openid-scopes", app.id, "openid", "profile"])
    }

    /// The broker's demo app, with a redirect URI on a free loopback port
    /// registered by `device-broker apikey set-redirect-urls`, signing in
    /// by approval.
    static func demoApp(_ broker: LiveBroker) async throws -> App {
        let app = App(id: broker.apiKeyID, secret: broker.apiSecret, port: try freePort())
        try await command(broker, ["apikey", "set-redirect-urls", app.id, app.redirectURI])
        try await signsIn(broker, app)
        return app
    }

    /// Another app, named `name`, made by `device-broker apikey create`
    /// with its redirect URI, signing in by approval.
    static func createApp(_ broker: LiveBroker, name: String) async throws -> App {
        let port = try freePort()
        let created = try await command(
            broker,
            ["apikey", "create", "--name", name, "--redirect-url", "http://127.0.0.1:\(port)/callback", "--json"])
        let key = try #require(
            try JSONSerialization.jsonObject(with: Data(created.utf8)) as? [String: Any], "\(created)")
        #expect(key["name"] as? String == name, "the name is stored as given: \(key)")
        let app = App(
            id: try #require(key["api_key_id"] as? String), secret: try #require(key["api_secret_key"] as? String),
            port: port)
        try await signsIn(broker, app)
        return app
    }

    /// Enrolls a machine (a config directory) as a trusted device of `user`
    /// at `app`, with a token the app's backend asked for.
    static func enrollMachine(_ broker: LiveBroker, app: App, user: String) async throws -> URL {
        let directory = try temporaryDirectory("machine-\(app.id)").appendingPathComponent("countersign")
        let backend = CountersignBackend(broker: broker.url, apiKeyID: app.id, apiSecretKey: app.secret)
        let token = try await backend.createEnrollmentToken(user: user).token
        let enroll = try agent(broker, app: app, ["enroll", "--token", token, "--name", "laptop"], directory, user)
        guard try await enroll.exitCode(timeout: .seconds(120)) == 0 else {
            throw ProcessFailure("enroll failed: \(enroll.text)")
        }
        return directory
    }

    /// `device-agent` at `app`, as `user`.
    static func agent(
        _ broker: LiveBroker, app: App, _ arguments: [String], _ directory: URL, _ user: String, stdin: String? = nil
    ) throws -> RunningProcess {
        try RunningProcess(
            "device-agent",
            arguments + ["--broker", broker.url, "--api-key", app.id, "--user", user, "--config-dir", directory.path],
            stdin: stdin)
    }

    /// The relying party of `app`, listening for the browser; returns it
    /// with the authorization URL it printed for the browser to open.
    static func relyingParty(_ broker: LiveBroker, app: App) async throws -> (RunningProcess, String) {
        let process = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", scriptsDirectory.appendingPathComponent("oidc-rp-browser.py").path, broker.url, app.id,
                app.secret, String(app.port), "--timeout", "600",
            ])
        let url = try await process.waitFor(#"authorize: (\S+)"#, timeout: .seconds(120))
        return (process, url)
    }

    /// The JSON object the relying party printed last.
    static func result(of process: RunningProcess) throws -> [String: Any] {
        let line = try #require(process.text.split(separator: "\n").last { $0.hasPrefix("{") }, "\(process.text)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    /// Runs `body` with a new headless Chromium, quit however `body` ends.
    static func withBrowser<T>(
        width: Int = 1280, height: Int = 900, _ body: (WebDriver) async throws -> T
    ) async throws -> T {
        let browser = try await WebDriver.start(width: width, height: height)
        do {
            let value = try await body(browser)
            await browser.quit()
            return value
        } catch {
            await browser.quit()
            throw error
        }
    }

    /// Makes every page the browser opens from now on record a call of
    /// `alert()` in `window.alerted` instead of showing a dialog.
    static func trapAlerts(_ browser: WebDriver) async throws {
        try await browser.cdp(
            "Page.addScriptToEvaluateOnNewDocument",
            ["source": "window.alert = (message) => { window.alerted = String(message); };"])
    }

    /// Whether the page called `alert()` (see ``trapAlerts(_:)``) or shows
    /// a dialog now.
    static func alerted(_ browser: WebDriver) async throws -> Bool {
        let trapped = try await browser.execute("return window.alerted ?? null")
        let dialog = try? await WebDriver.call(browser.base, .GET, "/session/\(browser.session)/alert/text")
        return !(trapped is NSNull) || dialog != nil
    }

    /// Opens the authorization URL, types `user` on the page and sends it;
    /// returns the number the waiting page shows, and the id of the login
    /// it waits for (in the page's address).
    static func startSignIn(_ browser: WebDriver, _ url: String, as user: String) async throws -> (
        number: String, eventID: String
    ) {
        try await browser.open(url)
        try await browser.waitFor(element: "#user", timeout: .seconds(60))
        try await browser.type(user, into: "#user")
        try await browser.click("form[action='/oauth/sign-in'] button[type=submit]")
        try await browser.waitFor(element: "#number", timeout: .seconds(60))
        let address = try await browser.currentURL
        let id = URLComponents(string: address)?.queryItems?.first { $0.name == "id" }?.value
        return (try await browser.text("#number"), try #require(id, "the waiting page names its login: \(address)"))
    }

    /// Every cookie the browser holds, of every site and path.
    static func allCookies(_ browser: WebDriver) async throws -> [[String: Any]] {
        let answer = try await browser.cdp("Network.getAllCookies")
        return (answer["value"] as? [String: Any])?["cookies"] as? [[String: Any]] ?? []
    }

    /// Waits, without touching the page, until the browser is at the app's
    /// redirect URI and the app's page says `text`; returns the query the
    /// broker sent it back with.
    static func waitForApp(_ browser: WebDriver, _ app: App, saying text: String) async throws -> [String: String] {
        do {
            try await browser.waitUntil("back at \(app.redirectURI)", timeout: .seconds(60)) {
                try await browser.currentURL.hasPrefix(app.redirectURI + "?")
            }
        } catch {
            throw ProcessFailure(
                "not back at the app but at \(try await browser.currentURL):\n\(try await browser.source)")
        }
        try await browser.waitFor(element: "#outcome", timeout: .seconds(60))
        let shown = try await browser.text("#outcome")
        let page = try await browser.source
        #expect(shown == text, "the app's page: \(page)")
        let items = URLComponents(string: try await browser.currentURL)?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }) { first, _ in first }
    }

    /// A GET as any HTTP client sends it: the status, headers and body.
    static func get(_ url: String, cookie: String? = nil) async throws -> (
        status: Int, headers: HTTPHeaders, body: String
    ) {
        var request = HTTPClientRequest(url: url)
        // Never pooled: a kept connection could outlive this test's broker.
        request.headers.add(name: "Connection", value: "close")
        if let cookie { request.headers.add(name: "Cookie", value: cookie) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
        return (Int(response.status.code), response.headers, body)
    }

    /// A Content-Security-Policy's directives, by name.
    static func directives(_ policy: String) -> [String: [String]] {
        var directives: [String: [String]] = [:]
        for directive in policy.split(separator: ";") {
            let words = directive.split(separator: " ").map(String.init)
            if let name = words.first { directives[name.lowercased()] = Array(words.dropFirst()) }
        }
        return directives
    }

    /// The claims the relying party verified, checked for a sign-in of
    /// `user` at `app` approved with a device's key.
    static func expectSignedIn(_ outcome: [String: Any], app: App, user: String) throws {
        #expect(outcome["outcome"] as? String == "tokens", "\(outcome)")
        #expect(outcome["state_ok"] as? Bool == true && outcome["iss_ok"] as? Bool == true, "\(outcome)")
        let claims = try #require(outcome["claims"] as? [String: Any], "\(outcome)")
        let sub = OpenIDSubject.of(apiKeyID: app.id, user: user)
        #expect(claims["sub"] as? String == sub, "the sub is the app's, not the user name: \(claims)")
        #expect(claims["preferred_username"] as? String == user, "\(claims)")
        #expect(claims["acr"] as? String == ApprovalAuthentication.deviceACR, "\(claims)")
        #expect(claims["amr"] as? [String] == ["swk"], "\(claims)")
        #expect((claims["sid"] as? String)?.hasPrefix("ev_") == true, "\(claims)")
        #expect(claims["auth_time"] is NSNumber, "\(claims)")
        let userinfo = try #require(outcome["userinfo"] as? [String: Any], "\(outcome)")
        #expect(userinfo["sub"] as? String == sub && userinfo["preferred_username"] as? String == user, "\(userinfo)")
    }
}
