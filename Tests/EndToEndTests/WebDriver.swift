import Foundation
import NIOHTTP1

/// A W3C WebDriver session with a real headless Chromium, through the
/// real chromedriver process.
struct WebDriver {
    let driver: RunningProcess
    let base: String
    let session: String

    static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    /// A browser with a window of `width` × `height` (a phone's, by
    /// default), keeping its profile (IndexedDB, service workers) in
    /// `profile` if given, so that a second browser on it finds them.
    static func start(width: Int = 390, height: Int = 844, profile: URL? = nil) async throws -> WebDriver {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver") else {
            throw ProcessFailure("chromedriver is not installed: apt-get install chromium chromium-driver")
        }
        let port = try freePort()
        let driver = try RunningProcess("/usr/bin/chromedriver", ["--port=\(port)"])
        let base = "http://127.0.0.1:\(port)"
        let deadline = ContinuousClock.now + .seconds(60)
        while (try? await call(base, .GET, "/status")) == nil {
            guard ContinuousClock.now < deadline else {
                throw ProcessFailure("chromedriver did not start:\n\(driver.text)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome",
                    "goog:chromeOptions": [
                        "binary": "/usr/bin/chromium",
                        "args": [
                            "--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=\(width),\(height)",
                        ] + (profile.map { ["--user-data-dir=\($0.path)"] } ?? []),
                    ],
                ]
            ]
        ]
        let created = try await call(base, .POST, "/session", capabilities)
        guard let value = created["value"] as? [String: Any], let session = value["sessionId"] as? String else {
            throw ProcessFailure("no WebDriver session: \(created)")
        }
        return WebDriver(driver: driver, base: base, session: session)
    }

    func open(_ url: String) async throws {
        _ = try await Self.call(base, .POST, "/session/\(session)/url", ["url": url])
    }

    func element(_ css: String) async throws -> String {
        let found = try await Self.call(
            base, .POST, "/session/\(session)/element", ["using": "css selector", "value": css])
        guard let value = found["value"] as? [String: Any], let id = value[Self.elementKey] as? String else {
            throw ProcessFailure("no element \(css): \(found)")
        }
        return id
    }

    func type(_ text: String, into css: String) async throws {
        let id = try await element(css)
        _ = try await Self.call(base, .POST, "/session/\(session)/element/\(id)/value", ["text": text])
    }

    /// Clicks the element matching `css`; looked up again if the page
    /// redrew it between the lookup and the click (a stale reference), and
    /// tried again for up to 20 s while it cannot be clicked yet (hidden
    /// until the page's script shows it).
    func click(_ css: String) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        for attempt in 1... {
            let id = try await element(css)
            do {
                _ = try await Self.call(base, .POST, "/session/\(session)/element/\(id)/click", [String: Any]())
                return
            } catch let failure as ProcessFailure
                where (attempt < 5 && failure.description.contains("stale element reference"))
                || (ContinuousClock.now < deadline && failure.description.contains("element not interactable"))
            {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// The element's rendered text.
    func text(_ css: String) async throws -> String {
        let id = try await element(css)
        return try await Self.call(base, .GET, "/session/\(session)/element/\(id)/text")["value"] as? String ?? ""
    }

    /// Runs `script` in the page (its last statement's `return` is the
    /// value); with `async`, the script calls `arguments[0]` with its value.
    func execute(_ script: String, async: Bool = false, arguments: [Any] = []) async throws -> Any? {
        let path = async ? "/execute/async" : "/execute/sync"
        return try await Self.call(
            base, .POST, "/session/\(session)\(path)", ["script": script, "args": arguments])["value"]
    }

    /// A Chrome DevTools Protocol command, through chromedriver.
    @discardableResult
    func cdp(_ command: String, _ parameters: [String: Any] = [:]) async throws -> [String: Any] {
        try await Self.call(
            base, .POST, "/session/\(session)/goog/cdp/execute", ["cmd": command, "params": parameters])
    }

    /// Hands `data` to the service worker of `origin` as a push message,
    /// as the browser does with what its push service delivers. CDP wants
    /// the registration's id, which nothing reads out; Chromium numbers a
    /// new profile's registrations from 0, and a push to an id that is not
    /// registered does nothing, so the first few are tried.
    func deliverPush(_ data: String, origin: String) async throws {
        try await cdp("ServiceWorker.enable")
        for registration in 0..<8 {
            try await cdp(
                "ServiceWorker.deliverPushMessage",
                ["origin": origin, "registrationId": String(registration), "data": data])
        }
    }

    /// The notifications the page's service worker shows now.
    func notifications() async throws -> [(title: String, body: String, tag: String)] {
        let shown = try await execute(
            """
            const done = arguments[0];
            navigator.serviceWorker.ready.then((registration) => registration.getNotifications())
              .then((shown) => done(shown.map((notice) => [notice.title, notice.body, notice.tag])));
            """, async: true)
        return (shown as? [[String]] ?? []).map { (title: $0[0], body: $0[1], tag: $0[2]) }
    }

    /// Waits (generously) until `condition` holds.
    func waitUntil(_ what: String, timeout: Duration = .seconds(60), _ condition: () async throws -> Bool)
        async throws
    {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ProcessFailure("the page never got to this: \(what)")
    }

    /// Adds a virtual authenticator (WebDriver's WebAuthn extension) that
    /// passkey ceremonies in this session use: the phone's screen lock, as
    /// CTAP2 over the platform's "internal" transport, verifying its user
    /// unless told otherwise. Returns its id.
    func addVirtualAuthenticator() async throws -> String {
        let added = try await Self.call(
            base, .POST, "/session/\(session)/webauthn/authenticator",
            [
                "protocol": "ctap2", "transport": "internal", "hasResidentKey": true, "hasUserVerification": true,
                "isUserConsenting": true, "isUserVerified": true,
            ])
        guard let id = added["value"] as? String else { throw ProcessFailure("no virtual authenticator: \(added)") }
        return id
    }

    /// Whether the virtual authenticator's fingerprint or PIN check passes.
    func setUserVerified(_ authenticator: String, _ verified: Bool) async throws {
        try await Self.call(
            base, .POST, "/session/\(session)/webauthn/authenticator/\(authenticator)/uv",
            ["isUserVerified": verified])
    }

    /// The credentials the virtual authenticator holds (id, rpId,
    /// privateKey as PKCS#8, signCount, …).
    func credentials(_ authenticator: String) async throws -> [[String: Any]] {
        try await Self.call(base, .GET, "/session/\(session)/webauthn/authenticator/\(authenticator)/credentials")[
            "value"] as? [[String: Any]] ?? []
    }

    /// Deletes a credential, as a person deleting a passkey in the phone's settings.
    func removeCredential(_ authenticator: String, _ credential: [String: Any]) async throws {
        guard let id = credential["credentialId"] as? String else { throw ProcessFailure("no credential id") }
        try await Self.call(
            base, .DELETE, "/session/\(session)/webauthn/authenticator/\(authenticator)/credentials/\(id)")
    }

    /// Replaces a credential with the same one whose counter says
    /// `signCount`: what a copy of it taken earlier would hold.
    func setSignCount(_ authenticator: String, of credential: [String: Any], to signCount: Int) async throws {
        guard let id = credential["credentialId"] as? String else { throw ProcessFailure("no credential id") }
        let path = "/session/\(session)/webauthn/authenticator/\(authenticator)"
        try await Self.call(base, .DELETE, "\(path)/credentials/\(id)")
        var copy = credential
        copy["signCount"] = signCount
        try await Self.call(base, .POST, "\(path)/credential", copy)
    }

    /// Accepts the page's `confirm()` dialog.
    func acceptDialog() async throws {
        _ = try await Self.call(base, .POST, "/session/\(session)/alert/accept", [String: Any]())
    }

    /// The cookies the browser holds for the page's URL, as WebDriver
    /// lists them (name, value, path, httpOnly, secure, sameSite).
    func cookies() async throws -> [[String: Any]] {
        try await Self.call(base, .GET, "/session/\(session)/cookie")["value"] as? [[String: Any]] ?? []
    }

    /// A PNG of one element, as the page draws it.
    func screenshot(of css: String) async throws -> Data {
        let id = try await element(css)
        let value =
            try await Self.call(base, .GET, "/session/\(session)/element/\(id)/screenshot")["value"] as? String ?? ""
        return Data(base64Encoded: value) ?? Data()
    }

    /// A PNG of the window.
    func screenshot() async throws -> Data {
        let value = try await Self.call(base, .GET, "/session/\(session)/screenshot")["value"] as? String ?? ""
        return Data(base64Encoded: value) ?? Data()
    }

    /// Waits until an element matching `css` is on the page.
    func waitFor(element css: String, timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if (try? await element(css)) != nil { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ProcessFailure("the page never had \(css):\n\(try await source)")
    }

    var currentURL: String {
        get async throws {
            try await Self.call(base, .GET, "/session/\(session)/url")["value"] as? String ?? ""
        }
    }

    var source: String {
        get async throws {
            try await Self.call(base, .GET, "/session/\(session)/source")["value"] as? String ?? ""
        }
    }

    /// Waits until the page's source contains `text`.
    func waitFor(text: String, timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await source.contains(text) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ProcessFailure("the page never showed \(text):\n\(try await source)")
    }

    func quit() async {
        _ = try? await Self.call(base, .DELETE, "/session/\(session)")
        _ = try? await Self.call(base, .GET, "/shutdown")
        driver.stop()
    }

    @discardableResult
    static func call(_ base: String, _ method: HTTPMethod, _ path: String, _ body: [String: Any]? = nil) async throws
        -> [String: Any]
    {
        let (status, json) = try await LiveHTTP.request(method, base + path, body: body)
        guard status == 200 else { throw ProcessFailure("WebDriver \(method) \(path): \(status) \(json)") }
        return json
    }
}

extension LiveBroker {
    /// A broker for a test that drives a browser, whose requests stay open
    /// for 10 minutes unless `arguments` say otherwise: a loaded machine
    /// can take longer than the default minute over a page's few steps, and
    /// a request that ended under the test is not what it tests.
    static func startForBrowser(arguments: [String] = []) async throws -> LiveBroker {
        let window = arguments.contains("--approval-window") ? [] : ["--approval-window", "10m"]
        return try await start(arguments: window + arguments)
    }
}
