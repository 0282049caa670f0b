import CountersignClient
import CountersignCore
import Foundation
import Testing

/// The console's actions in a real Chromium, against a real broker, its
/// webhook receiver and real `device-agent` processes: each one asked
/// first, done, and in the audit log.
@Suite("end to end: acting from the operator's console", .serialized)
struct ConsoleManageBrowserTests {
    typealias Console = ConsoleBrowserTests

    /// Clicks the row's button whose text is `label` (in the row that
    /// mentions `text`), and confirms.
    static func act(_ browser: WebDriver, in container: String, row text: String, button label: String) async throws {
        try await browser.waitUntil("a \(label) button by \(text) in \(container)") {
            try await browser.execute(
                """
                const [container, text, label] = arguments;
                return [...document.querySelectorAll(container + " tr")].some((row) =>
                  row.textContent.includes(text)
                  && [...row.querySelectorAll("button")].some((button) => button.textContent === label));
                """, arguments: [container, text, label]) as? Bool == true
        }
        let clicked = try await browser.execute(
            """
            const [container, text, label] = arguments;
            for (const row of document.querySelectorAll(container + " tr")) {
              if (!row.textContent.includes(text)) continue;
              for (const button of row.querySelectorAll("button")) {
                if (button.textContent === label) { button.click(); return true; }
              }
            }
            return false;
            """, arguments: [container, text, label])
        #expect(clicked as? Bool == true, "no \(label) button in a row of \(container) with \(text)")
        try await browser.waitFor(element: "#confirm[open]")
        try await browser.click("#confirm-yes")
    }

    @Test(
        "end a fraud protection, send a failed webhook message again, disable and enable its endpoint, make, rotate and revoke an app, and enroll a user by QR code; each audited"
    )
    func actions() async throws {
        let (broker, receiver, _) = try await WebhookEndToEndTests.setUp(
            types: ["event.created"], device: false, arguments: ["--trusted-proxy", "127.0.0.1/32"])
        defer {
            broker.stop()
            receiver.stop()
        }
        let operatorDevice = try await Console.addOperator(broker, "alice")
        let laptop = try await broker.enrollMachine(name: "laptop")

        // alice's laptop reports a request as fraud: alice is protected.
        // Its event.created message is answered 503: tried again later.
        try await receiver.answer("app", with: 503)
        let machine = try temporaryDirectory("machine-B").appendingPathComponent("countersign")
        let (login, eventID, _) = try await broker.startLogin(machine: machine)
        let report = try broker.agent(["approve", "--event", eventID, "--report-fraud"], configDirectory: laptop)
        #expect(try await report.exitCode() == 0, "\(report.text)")
        _ = try await login.exitCode()

        let browser = try await WebDriver.start(width: 1280, height: 900)
        do {
            try await Console.signIn(browser, broker, as: "alice", device: operatorDevice)
            try await browser.waitFor(text: "Signed in as alice", timeout: .seconds(60))

            try await browser.click("nav button[data-view=watch]")
            try await browser.waitFor(element: "#watch-result table")
            try await WebApproverBrowserTests.save(browser, "console-under-attack")
            let watch = try await browser.text("#watch-result")
            #expect(watch.contains("alice") && watch.contains("127.0.0.1"), "\(watch)")
            try await Self.act(browser, in: "#watch-result", row: "alice", button: "End now")
            try await browser.waitFor(text: "Ended the protection of alice")
            let again = try await broker.startLogin(machine: machine)
            #expect(again.1 != eventID, "a requester may ask for alice again")

            // Disabled while its message waits to be tried again, the
            // endpoint fails it; enabled, the message is sent again.
            _ = try await receiver.waitUntil("the first attempt", name: "app") { !$0.isEmpty }
            try await browser.click("nav button[data-view=webhooks]")
            try await Self.act(browser, in: "#webhooks-result", row: receiver.endpoint("app"), button: "Disable")
            try await browser.waitFor(text: "Disabled \(receiver.endpoint("app"))")
            try await browser.waitUntil("a failed message", timeout: .seconds(90)) {
                try await browser.click("nav button[data-view=webhooks]")
                return (try? await browser.text("#webhooks-result"))?.contains("Send again") == true
            }
            #expect(try await browser.text("#webhooks-result").contains("Failed messages: "))
            // The failed messages are counted and read a page at a time.
            let pages =
                try await browser.execute(
                    """
                    const get = (path) => fetch('api/' + path).then((r) => r.json().then((body) => [r.status, body]));
                    Promise.all([get('webhooks?limit=1'), get('webhooks/\(broker.apiKeyID)/failed?limit=1'),
                      get('webhooks/\(broker.apiKeyID)/failed?cursor=not-a-cursor')]).then(arguments[0]);
                    """, async: true) as? [[Any]] ?? []
            let listed = (pages.first?[1] as? [String: Any])?["apps"] as? [[String: Any]] ?? []
            #expect((listed.first?["failed_count"] as? Int ?? 0) >= 1, "\(pages)")
            #expect(
                (((pages.count > 1 ? pages[1][1] : nil) as? [String: Any])?["messages"] as? [Any])?.count == 1,
                "\(pages)")
            #expect((pages.count > 2 ? pages[2][0] : nil) as? Int == 400, "a cursor the broker never gave: \(pages)")
            try await Self.act(browser, in: "#webhooks-result", row: receiver.endpoint("app"), button: "Enable")
            try await browser.waitFor(text: "Enabled \(receiver.endpoint("app"))")
            try await receiver.answer("app", with: 204)
            try await Self.act(browser, in: "#webhooks-result", row: "disabled", button: "Send again")
            try await browser.waitFor(text: "Sending msg_")
            _ = try await receiver.waitUntil("the message sent again", name: "app") {
                $0.contains { $0.answered == 204 }
            }

            // An app made, its secret shown once, rotated, then revoked.
            try await browser.click("nav button[data-view=apps]")
            try await browser.waitFor(element: "#new-app-name")
            try await browser.type("<i>Payroll</i>", into: "#new-app-name")
            try await browser.click("#new-app button[type=submit]")
            try await browser.waitFor(element: "#confirm[open]")
            try await browser.click("#confirm-yes")
            try await browser.waitFor(element: "#app-secret dd")
            try await WebApproverBrowserTests.save(browser, "console-apps")
            let made = try await browser.text("#app-secret")
            let secret = try #require(made.firstMatch(of: /cs_[A-Za-z0-9_-]+/)?.0)
            let keyID = try #require(made.firstMatch(of: /ck_[A-Za-z0-9_-]+/)?.0)
            let backend = CountersignBackend(broker: broker.url, apiKeyID: String(keyID), apiSecretKey: String(secret))
            #expect(try await backend.devices(user: "nobody").isEmpty, "the shown secret works")
            try await Self.act(browser, in: "#apps-result", row: String(keyID), button: "Rotate secret")
            try await browser.waitFor(text: "new secret")
            let rotated = try #require(try await browser.text("#app-secret").firstMatch(of: /cs_[A-Za-z0-9_-]+/)?.0)
            #expect(rotated != secret)
            try await Self.act(browser, in: "#apps-result", row: String(keyID), button: "Revoke")
            try await browser.waitFor(text: "Revoked")
            await #expect(throws: (any Error).self) { _ = try await backend.devices(user: "nobody") }

            // A new user, enrolled by the link's QR code as the page draws it.
            // A user the broker does not know is offered no link from a
            // search (a typo would get one); "Enroll someone new" asks.
            try await browser.click("nav button[data-view=users]")
            try await browser.type("dave", into: "#user-prefix")
            try await browser.waitFor(text: "No user id starts with “dave”")
            #expect(try await browser.execute("return document.querySelector('#enroll-form')") is NSNull)
            try await browser.click("#new-user summary")
            try await browser.type("dave", into: "#new-user-id")
            try await browser.click("#new-user-form button[type=submit]")
            try await browser.waitFor(element: "#enroll-form")
            try await browser.click("#enroll-form button[type=submit]")
            try await browser.waitFor(element: "#confirm[open]")
            try await browser.click("#confirm-yes")
            try await browser.waitFor(element: "#enrollment svg.qr")
            let link = try await browser.text("#enrollment-link")
            try await WebApproverBrowserTests.save(browser, "console-enrollment")
            let png = try temporaryDirectory("console-qr").appendingPathComponent("qr.png")
            _ = try await browser.execute(
                "document.querySelector('#enrollment svg.qr').scrollIntoView({block: 'center'})")
            try await browser.screenshot(of: "#enrollment svg.qr").write(to: png)
            let zbar = try RunningProcess("/usr/bin/zbarimg", ["--quiet", "--raw", png.path])
            #expect(try await zbar.exitCode() == 0, "\(zbar.text)")
            // (zbarimg may also say, on standard error, that it found no D-Bus.)
            #expect(
                zbar.text.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == link },
                "the QR code is the link: \(zbar.text)")
            let token = try #require(link.firstMatch(of: /enroll=(et_[A-Za-z0-9_-]+)/)?.1)
            let daves = try temporaryDirectory("machine-dave").appendingPathComponent("countersign")
            let enroll = try broker.agent(["enroll", "--token", String(token)], configDirectory: daves, user: "dave")
            #expect(try await enroll.exitCode(timeout: .seconds(120)) == 0, "\(enroll.text)")
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
        let actions = try await Console.auditActions(broker)
        for action in [
            "fraud_protection.ended", "webhook.resent", "webhook_endpoint.disabled", "webhook_endpoint.enabled",
            "apikey.created", "apikey.rotated", "apikey.revoked", "enrollment.issued",
        ] {
            #expect(actions.contains(action), "\(action) in \(actions)")
        }
    }
}
