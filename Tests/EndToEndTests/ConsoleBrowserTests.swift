import CountersignClient
import CountersignCore
import Foundation
import NIOHTTP1
import Testing

/// The operator's console in a real headless Chromium, against a real
/// broker: operators named with `device-broker operator add`, their devices
/// real `device-agent` processes enrolled at the console's app.
@Suite("end to end: the operator's console in a real browser", .serialized)
struct ConsoleBrowserTests {
    /// A broker that believes 127.0.0.1's X-Forwarded-For: a request can
    /// come "from another address" as it would through a proxy.
    static func startBroker() async throws -> LiveBroker {
        try await LiveBroker.startForBrowser(arguments: ["--trusted-proxy", "127.0.0.1/32"])
    }

    /// `device-broker ARGUMENTS` on the broker's store.
    static func brokerCommand(_ broker: LiveBroker, _ arguments: [String]) async throws -> String {
        let process = try RunningProcess("device-broker", arguments + broker.storeArguments)
        guard try await process.exitCode(timeout: .seconds(120)) == 0 else {
            throw ProcessFailure("device-broker \(arguments.joined(separator: " ")) failed: \(process.text)")
        }
        return process.text
    }

    /// Makes `name` an operator and enrolls a CLI device for them with the
    /// command `operator add` prints; returns the device's config directory.
    static func addOperator(_ broker: LiveBroker, _ name: String) async throws -> URL {
        let added = try await brokerCommand(broker, ["operator", "add", name, "--public-url", broker.url])
        let command = try #require(
            added.split(separator: "\n").first { $0.contains("device-agent enroll") }, "printed:\n\(added)")
        let token = try #require(command.firstMatch(of: /--token (et_[A-Za-z0-9_-]+)/)?.1)
        #expect(command.contains("--api-key \(ConsoleApp.apiKeyID) --user \(name)"), "\(command)")
        #expect(added.contains("\(broker.url)/console/"), "where to sign in:\n\(added)")
        let directory = try temporaryDirectory("operator-\(name)").appendingPathComponent("countersign")
        let enroll = try agent(broker, ["enroll", "--token", String(token), "--name", "ops-\(name)"], directory, name)
        guard try await enroll.exitCode(timeout: .seconds(120)) == 0 else {
            throw ProcessFailure("enroll failed: \(enroll.text)")
        }
        return directory
    }

    /// `device-agent` at the console's app, as operator `user`.
    static func agent(
        _ broker: LiveBroker, _ arguments: [String], _ directory: URL, _ user: String, stdin: String? = nil
    ) throws -> RunningProcess {
        try RunningProcess(
            "device-agent",
            arguments + [
                "--broker", broker.url, "--api-key", ConsoleApp.apiKeyID, "--user", user, "--config-dir",
                directory.path,
            ], stdin: stdin)
    }

    /// Types the name on the page and approves the sign-in on the device
    /// with the number the page shows.
    static func signIn(_ browser: WebDriver, _ broker: LiveBroker, as name: String, device: URL) async throws {
        try await browser.open(broker.url + "/console/")
        try await browser.waitFor(element: "#sign-in:not([hidden])")
        try await browser.type(name, into: "#operator")
        try await browser.click("#sign-in-form button[type=submit]")
        try await browser.waitFor(element: "#match-number:not(:empty)")
        try await WebApproverBrowserTests.save(browser, "console-sign-in")
        let number = try await browser.text("#match-number")
        // As a person at the device answers: yes, then the number.
        let approve = try agent(broker, ["approve", "--timeout", "60"], device, name, stdin: "y\n\(number)\n")
        #expect(try await approve.exitCode(timeout: .seconds(120)) == 0, "\(approve.text)")
    }

    /// The console API called from outside the browser, with a cookie.
    static func call(
        _ broker: LiveBroker, _ method: String, _ path: String, cookie: String, headers: [String: String] = [:]
    ) async throws -> Int {
        var all = headers
        all["Cookie"] = "countersign_console=\(cookie)"
        return try await LiveHTTP.request(.init(rawValue: method), broker.url + "/console/api/" + path, headers: all)
            .status
    }

    static func auditActions(_ broker: LiveBroker) async throws -> [String] {
        let exported = try await brokerCommand(broker, ["audit", "export"])
        return exported.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["action"] as? String
        }
    }

    @Test(
        "an operator signs in by approving on a CLI device; the cookie is HttpOnly and SameSite=Strict; copied elsewhere, posted cross-site or kept after sign-out it is refused"
    )
    func signInAndOut() async throws {
        var broker = try await Self.startBroker()
        defer { broker.stop() }
        let device = try await Self.addOperator(broker, "alice")
        let browser = try await WebDriver.start(width: 1280, height: 900)
        do {
            try await Self.signIn(browser, broker, as: "alice", device: device)
            try await browser.waitFor(text: "Signed in as alice", timeout: .seconds(60))
            let cookie = try #require(
                try await browser.cookies().first { $0["name"] as? String == "countersign_console" })
            #expect(cookie["httpOnly"] as? Bool == true)
            #expect(cookie["sameSite"] as? String == "Strict")
            #expect(cookie["path"] as? String == "/console/")
            let secret = try #require(cookie["value"] as? String)
            #expect(
                try await browser.execute("return document.cookie") as? String == "",
                "no script of the page reads it")

            // From the address it was made at, it reads; from another, it does not.
            #expect(try await Self.call(broker, "GET", "session", cookie: secret) == 200)
            #expect(
                try await Self.call(
                    broker, "GET", "session", cookie: secret, headers: ["X-Forwarded-For": "203.0.113.9"]) == 401)
            // A change without the session's CSRF token, or from another site's page, is refused.
            #expect(try await Self.call(broker, "POST", "sign-out", cookie: secret) == 403)
            #expect(
                try await Self.call(
                    broker, "POST", "sign-out", cookie: secret, headers: ["Sec-Fetch-Site": "cross-site"]) == 403)
            // A real cross-site form post, from a page of another origin.
            try await browser.open(
                "data:text/html,<form method=post action='\(broker.url)/console/api/sign-out'></form>"
                    + "<script>document.forms[0].submit()</script>")
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await Self.call(broker, "GET", "session", cookie: secret) == 200, "still signed in")

            try await browser.open(broker.url + "/console/")
            try await browser.waitFor(text: "Signed in as alice")
            try await browser.click("nav button[data-view=audit]")
            try await browser.waitFor(element: "#audit-result tbody tr")
            let audit = try await browser.text("#audit-result")
            #expect(audit.contains("signed in") && audit.contains("operator added"), "in words:\n\(audit)")
            // Narrowed to one action, then downloaded as the page shows it.
            _ = try await browser.execute(
                "document.querySelector('#audit-action').value = 'operator.added';"
                    + "document.querySelector('#audit-search button[type=submit]').click()")
            try await browser.waitUntil("only the operator added") {
                try await browser.execute("return document.querySelectorAll('#audit-result tbody tr').length") as? Int
                    == 1
            }
            #expect(try await browser.text("#audit-result").contains("alice"))
            let exported =
                try await browser.execute(
                    "fetch(document.querySelector('#audit-export').href).then((r) => r.text()).then(arguments[0])",
                    async: true) as? String ?? ""
            #expect(
                exported.split(separator: "\n").count == 1 && exported.contains(#""action":"operator.added""#)
                    && exported.contains(#""ip":null"#), "\(exported)")
            // With the broker away the sign-out fails: the page says so and
            // stays signed in. Once the broker is back, it goes through.
            broker.stop()
            try await browser.click("#sign-out")
            try await browser.waitFor(text: "Not signed out")
            #expect(try await browser.text("#signed-in-as") == "Signed in as alice")
            broker = try await broker.restart()
            #expect(try await Self.call(broker, "GET", "session", cookie: secret) == 200, "still signed in")
            try await browser.click("#sign-out")
            try await browser.waitFor(text: "Signed out.")
            #expect(try await Self.call(broker, "GET", "session", cookie: secret) == 401, "ended on the server")
            try await browser.open(broker.url + "/console/")
            try await browser.waitFor(element: "#sign-in:not([hidden])")
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
        let actions = try await Self.auditActions(broker)
        #expect(
            actions == ["operator.added", "enrollment.issued", "operator.signed_in", "operator.signed_out"],
            "\(actions)")
    }

    @Test(
        "an approval by a user of the console's app who is not an operator does not sign in, and the refusal is audited"
    )
    func nonOperatorRefused() async throws {
        let broker = try await Self.startBroker()
        defer { broker.stop() }
        let device = try await Self.addOperator(broker, "bob")
        // bob keeps his device but is no operator: as a store restored from
        // a backup made before his removal, with the operators of later.
        let sqlite = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", "-c",
                "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                    + "c.execute(\"DELETE FROM operators WHERE name = 'bob'\"); c.commit()",
                broker.dataDirectory.appendingPathComponent("countersign.sqlite").path,
            ])
        #expect(try await sqlite.exitCode() == 0, "\(sqlite.text)")
        let browser = try await WebDriver.start(width: 1280, height: 900)
        do {
            try await Self.signIn(browser, broker, as: "bob", device: device)
            try await browser.waitFor(text: "bob is not an operator of this console", timeout: .seconds(60))
            #expect(try await browser.cookies().contains { $0["name"] as? String == "countersign_console" } == false)
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
        #expect(try await Self.auditActions(broker).last == "operator.sign_in_refused")
    }

    @Test(
        "an operator finds a user's devices and events across apps, hostile values show as text, and removing a device is confirmed and audited"
    )
    func lookUpAndRemove() async throws {
        let broker = try await Self.startBroker()
        defer { broker.stop() }
        let operatorDevice = try await Self.addOperator(broker, "alice")
        let hostileUser = "<img src=x onerror=window.hacked=1>"
        let hostileName = "<b onmouseover=window.hacked=2>laptop</b>"
        let laptop = try await broker.enrollMachine(user: hostileUser, name: hostileName)
        _ = laptop
        let browser = try await WebDriver.start(width: 1280, height: 900)
        do {
            try await Self.signIn(browser, broker, as: "alice", device: operatorDevice)
            try await browser.waitFor(text: "Signed in as alice", timeout: .seconds(60))
            // Found by the start of the id, as it is typed, and opened from the list.
            try await browser.click("nav button[data-view=users]")
            try await browser.type("<img", into: "#user-prefix")
            try await browser.waitFor(element: "#user-list a")
            try await browser.click("#user-list a")
            try await browser.waitFor(element: "#user-result button[data-device]")
            try await WebApproverBrowserTests.save(browser, "console-user")
            let shown = try await browser.text("#user-result")
            #expect(shown.contains(hostileUser) && shown.contains(hostileName), "as text:\n\(shown)")
            #expect(
                try await browser.execute(
                    "return document.querySelectorAll('#user-result img, #user-result b, #user-list img').length")
                    as? Int == 0)
            #expect(try await browser.execute("return window.hacked ?? null") is NSNull)

            try await browser.click("#user-result button[data-device]")
            try await browser.waitFor(element: "#confirm[open]")
            #expect(try await browser.text("#confirm-text").contains(hostileName))
            try await browser.click("#confirm-yes")
            try await browser.waitFor(text: "Removed the device")
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
        let devices = try await broker.backend.devices(user: hostileUser)
        #expect(devices.allSatisfy { $0.revokedAt != nil } && devices.count == 1)
        #expect(try await Self.auditActions(broker).contains("device.removed"))
    }
}
