import CountersignClient
import CountersignCore
import Foundation
import Testing

/// The web approver in a real headless Chromium, against a real broker and
/// real `device-agent` processes.
@Suite("end to end: the web approver in a real browser", .serialized)
struct WebApproverBrowserTests {
    /// Where the screenshots go, for a person to look at.
    static let screenshots = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
        "countersign-approver-screenshots")

    static func save(_ browser: WebDriver, _ name: String) async throws {
        try FileManager.default.createDirectory(at: screenshots, withIntermediateDirectories: true)
        try await browser.screenshot().write(to: screenshots.appendingPathComponent(name + ".png"))
    }

    /// A card's CSS selector.
    static func card(_ eventID: String) -> String { "article[data-event-id='\(eventID)']" }

    /// Answers a request on the page: the number (if any), then a button.
    static func answer(_ browser: WebDriver, _ eventID: String, number: String?, button: String) async throws {
        try await browser.waitFor(element: card(eventID))
        if let number { try await browser.type(number, into: "#match-\(eventID)") }
        try await browser.click("\(card(eventID)) button[name=\(button)]")
    }

    /// Waits until the card's outcome says `text`.
    static func waitForOutcome(
        _ browser: WebDriver, _ eventID: String, _ text: String, timeout: Duration = .seconds(90)
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let shown = (try? await browser.text("\(card(eventID)) .outcome")) ?? ""
            if shown.contains(text) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ProcessFailure("the card of \(eventID) never said \(text):\n\(try await browser.source)")
    }

    @Test(
        "pairs with a CLI device, approves a CLI login with its number, keeps its key over a browser restart, and the key cannot be exported"
    )
    func pairAndApprove() async throws {
        let broker = try await LiveBroker.startForBrowser()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let profile = try temporaryDirectory("chromium-profile")
        var browser = try await WebDriver.start(profile: profile)
        do {
            try await browser.open("\(broker.url)/approve/#pair&api_key=\(broker.apiKeyID)&user=alice")
            try await browser.waitFor(text: "Pair this browser with a trusted device")
            #expect(try await browser.currentURL == broker.url + "/approve/", "the fragment is gone from the address")
            try await browser.click("#setup-button")
            try await browser.waitFor(element: "#pairing-code:not(:empty)")
            let code = try await browser.text("#pairing-code")
            let fingerprint = try await browser.text("#pairing-fingerprint")
            #expect(code.count == 6, "a 6-digit pairing code, not \(code)")
            try await Self.save(browser, "phone-pairing")

            // A reload while the pairing waits waits for the same one: the
            // key the trusted device approves is the key the page keeps.
            _ = try await browser.execute("document.getElementById('pairing-code').textContent = ''; location.reload()")
            try await browser.waitUntil("the same pairing after a reload") {
                let shownCode = try? await browser.text("#pairing-code")
                let shownFingerprint = try? await browser.text("#pairing-fingerprint")
                return shownCode == code && shownFingerprint == fingerprint
            }
            #expect(
                try await broker.backend.events(user: "alice", status: .pending).count == 1,
                "no second pairing request")

            // The CLI device sees the same fingerprint and is given the code.
            let pairing = try #require(
                try await broker.backend.events(user: "alice", status: .pending).first {
                    $0.event == EventName.enrollNewTrustedDevice
                })
            let approve = try broker.agent(
                ["approve", "--event", pairing.ID, "--yes", "--match", code], configDirectory: laptop)
            #expect(try await approve.exitCode() == 0, "\(approve.text)")
            #expect(approve.text.contains(fingerprint), "the CLI shows the fingerprint the phone shows")
            try await browser.waitFor(text: "trusted device of alice")
            // Opened at an address, the page cannot have a passkey (WebAuthn
            // takes a name as its RP ID): it says so and offers none.
            try await browser.waitFor(element: "#screen-lock:not([hidden])")
            #expect(try await browser.text("#screen-lock-state").contains("not at an address"))
            #expect(
                try await browser.execute("return document.getElementById('screen-lock-on').hidden") as? Bool == true)

            // A login from a machine that is not trusted, approved on the page.
            let machine = try temporaryDirectory("machine-B").appendingPathComponent("countersign")
            let (login, eventID, number) = try await broker.startLogin(machine: machine, name: "machine-B")
            try await browser.waitFor(element: "\(Self.card(eventID)) .left:not(:empty)")
            let card = try await browser.text(Self.card(eventID))
            #expect(card.contains("Log-in request") && card.contains("Machine\nmachine-B") && card.contains("demo"))
            #expect(card.contains("Address\n127.0.0.1"), "what the broker saw, on a row of its own")
            // Whatever the machine's zone: "UTC", "GMT+1", "CET", "PST".
            #expect(
                card.firstMatch(of: /Requested\n[^\n]*\d:\d\d[^\n]*\s(UTC|GMT|[A-Z]{2,5})([+-][0-9:]+)?(\n|$)/) != nil,
                "the time with its zone: \(card)")
            #expect(card.contains("s left"), "a live countdown")
            try await Self.save(browser, "phone-request")
            try await Self.answer(browser, eventID, number: number, button: "approve")
            try await Self.waitForOutcome(browser, eventID, "Approved")
            #expect(try await login.exitCode() == 0, "the CLI wakes with its token:\n\(login.text)")
            #expect(try await broker.backend.event(id: eventID).status == .approved)

            // The private key is in IndexedDB, and not even the page's own script can read it.
            let export = try await browser.execute(
                """
                const done = arguments[0];
                const request = indexedDB.open("countersign-approver");
                request.onsuccess = () => {
                  const get = request.result.transaction("accounts").objectStore("accounts").getAll();
                  get.onsuccess = async () => {
                    const key = get.result[0].privateKey;
                    try {
                      await crypto.subtle.exportKey("jwk", key);
                      done("exported");
                    } catch (error) {
                      done(`${key.extractable}:${error.name}`);
                    }
                  };
                };
                """, async: true)
            #expect(export as? String == "false:InvalidAccessError", "export refused: \(String(describing: export))")
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()

        // The same profile in a new browser still holds the key, and it still signs.
        browser = try await WebDriver.start(profile: profile)
        do {
            try await browser.open("\(broker.url)/approve/")
            try await browser.waitFor(text: "trusted device of alice")
            let machine = try temporaryDirectory("machine-C").appendingPathComponent("countersign")
            let (login, eventID, number) = try await broker.startLogin(machine: machine, name: "machine-C")
            try await Self.answer(browser, eventID, number: number, button: "approve")
            try await Self.waitForOutcome(browser, eventID, "Approved")
            #expect(try await login.exitCode() == 0, "\(login.text)")
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }

    @Test("the broker's own URL shows a page whose link opens the web approver")
    func landingPage() async throws {
        let broker = try await LiveBroker.startForBrowser()
        defer { broker.stop() }
        let browser = try await WebDriver.start()
        do {
            try await browser.open(broker.url + "/")
            try await browser.waitFor(text: "This is a Countersign broker.")
            try await browser.click("a[href='/approve/']")
            try await browser.waitUntil("the approver opens") {
                (try await browser.execute("return location.pathname") as? String) == "/approve/"
            }
            try await browser.waitFor(element: "#setup-button")
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }

    @Test("devices add-phone: its QR code (read by zbar) opens the approver, and it confirms the phone's pairing")
    func addPhone() async throws {
        let broker = try await LiveBroker.startForBrowser()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let addPhone = try broker.agent(["devices", "add-phone"], configDirectory: laptop, keepingInputOpen: true)
        defer { addPhone.stop() }
        let link = try await addPhone.waitFor(#"Or open: (\S+)"#)
        // A broker on 127.0.0.1 is linked at localhost, where a screen lock works.
        let local = broker.url.replacingOccurrences(of: "//127.0.0.1:", with: "//localhost:")
        #expect(link == "\(local)/approve/#pair&api_key=\(broker.apiKeyID)&user=alice")
        #expect(addPhone.text.contains("give --approver-url"), "a loopback link is pointed out: \(addPhone.text)")
        let reader = try RunningProcess(
            "/usr/bin/env", ["python3", scriptsDirectory.appendingPathComponent("read-terminal-qr.py").path],
            stdin: addPhone.text)
        #expect(try await reader.exitCode() == 0, "\(reader.text)")
        #expect(reader.text.trimmingCharacters(in: .whitespacesAndNewlines) == link, "the QR code says the link")

        let browser = try await WebDriver.start()
        do {
            try await browser.open(link)
            try await browser.waitFor(text: "Pair this browser with a trusted device")
            try await browser.click("#setup-button")
            try await browser.waitFor(element: "#pairing-code:not(:empty)")
            let code = try await browser.text("#pairing-code")
            let fingerprint = try await browser.text("#pairing-fingerprint")
            // The person holding the phone types its code: that approves.
            _ = try await addPhone.waitFor(#"Type the 6-digit code the new device shows to add it"#)
            #expect(addPhone.text.contains("fingerprint: \(fingerprint)"), "the terminal shows the phone's fingerprint")
            addPhone.send("\(code)\n")
            #expect(try await addPhone.exitCode() == 0, "\(addPhone.text)")
            #expect(addPhone.text.contains("The phone is now a trusted device of alice."))
            try await browser.waitFor(text: "trusted device of alice")
            #expect(try await broker.backend.devices(user: "alice").contains { $0.type == "browser" })
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }

    @Test(
        "a push reaches the page's service worker: it shows the broker's notice as a notification, closed once answered"
    )
    func serviceWorkerNotification() async throws {
        let broker = try await LiveBroker.startForBrowser(arguments: WebPushEndToEndTests.brokerArguments)
        defer { broker.stop() }
        // The broker's own push, caught and decrypted by the independent push
        // service for a CLI device of the same user: the plaintext a browser's
        // push service hands the service worker (none is reachable here).
        let push = try await PushServiceProcess.start(broker: broker.url)
        defer { push.stop() }
        let cli = try await broker.enrollDevice()
        let subscription = try await push.subscribe()
        _ = try await CountersignClient(for: cli).subscribePush(
            PushEndpoint(endpoint: subscription.endpoint, p256dh: subscription.p256dh, auth: subscription.auth),
            credential: cli)
        let token = try await broker.backend.createEnrollmentToken(user: "alice").token
        let browser = try await WebDriver.start()
        do {
            try await browser.open("\(broker.url)/approve/#enroll=\(token)&user=alice&api_key=\(broker.apiKeyID)")
            try await browser.waitFor(element: "#setup:not([hidden]) #setup-button")
            try await browser.click("#setup-button")
            try await browser.waitFor(text: "trusted device of alice")
            try await browser.cdp("Browser.grantPermissions", ["permissions": ["notifications"], "origin": broker.url])
            let ticket = try await broker.backend.requestApproval(user: "alice", numberMatching: false)
            _ = try await push.waitUntil("the broker's push") {
                $0.contains { $0.payload?.event_id == ticket.event.ID }
            }
            let plaintext = try #require(try await push.rawPayloads().first { $0["event_id"] == ticket.event.ID })
            let data = String(decoding: try JSONSerialization.data(withJSONObject: plaintext), as: UTF8.self)
            try await browser.deliverPush(data, origin: broker.url)
            try await browser.waitUntil("a notification") { try await !browser.notifications().isEmpty }
            let shown = try await browser.notifications()
            #expect(
                shown.count == 1 && shown.first?.title == "Confirm a transaction"
                    && shown.first?.tag == ticket.event.ID, "\(shown)")
            #expect(shown.first?.body == "demo asks you to approve a request. Tap to review it.")
            try await Self.answer(browser, ticket.event.ID, number: nil, button: "approve")
            try await Self.waitForOutcome(browser, ticket.event.ID, "Approved")
            try await browser.waitUntil("the notification closed") { try await browser.notifications().isEmpty }

            // What a push carries is never taken as markup or as part of a URL.
            let title = String(repeating: "T", count: 200)
            try await browser.deliverPush(
                #"{"event_id":"x\"><img src=x onerror=alert(1)>","title":"\#(title)","app":"<b>"}"#,
                origin: broker.url)
            try await browser.waitUntil("the odd notification") { try await !browser.notifications().isEmpty }
            let odd = try #require(try await browser.notifications().first)
            #expect(odd.tag == "countersign", "an event id that is not one is not used")
            #expect(odd.title.count == 80 && odd.body.hasPrefix("<b> asks you"), "plain text, capped")
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }

    @Test("enrolled by a backend link: shows markup as text, and each state: rejected, wrong number, expired, removed")
    func states() async throws {
        let broker = try await LiveBroker.startForBrowser(arguments: ["--approval-window", "45s"])
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let token = try await broker.backend.createEnrollmentToken(user: "alice").token
        let browser = try await WebDriver.start(width: 1280, height: 900)
        do {
            try await browser.open("\(broker.url)/approve/#enroll=\(token)&user=alice&api_key=\(broker.apiKeyID)")
            try await browser.waitFor(text: "Add this browser as a trusted device")
            try await browser.waitFor(element: "#setup:not([hidden]) #setup-button")
            try await browser.click("#setup-button")
            try await browser.waitFor(text: "trusted device of alice")

            // The page's digest of what it shows agrees with the vectors, valid and tampered.
            let vectors = try String(
                contentsOf: scriptsDirectory.deletingLastPathComponent().appendingPathComponent(
                    "proto/vectors/shown.json"),
                encoding: .utf8)
            let verdicts = try await browser.execute(
                """
                const done = arguments[arguments.length - 1];
                import("./keys.js").then(async (keys) => {
                  const results = [];
                  for (const test of (\(vectors)).tests) {
                    results.push(((await keys.shownDigest(test.shown)) === test.digest) === (test.result === "valid"));
                  }
                  done(results);
                }, (error) => done(String(error)));
                """, async: true)
            let agreed = try #require(verdicts as? [Bool], "\(String(describing: verdicts))")
            #expect(agreed.count >= 10 && agreed.allSatisfy { $0 }, "\(agreed)")

            // Markup and script in every field a requester or backend writes stay text.
            let markup = #"<b>Pay</b> <img src=x onerror="window.pwned=1"><script>window.pwned=2</script>"#
            let rejected = try await broker.backend.requestApproval(user: "alice", details: markup)
            try await browser.waitFor(element: Self.card(rejected.event.ID))
            #expect(try await browser.text("\(Self.card(rejected.event.ID)) dl").contains(markup))
            let injected = try await browser.execute(
                "return [document.querySelectorAll('article b, article img, article script').length, String(window.pwned)]"
            )
            #expect(
                (injected as? [Any])?.map { "\($0)" } == ["0", "undefined"],
                "nothing ran: \(String(describing: injected))")
            try await Self.save(browser, "desktop-request")
            try await Self.answer(browser, rejected.event.ID, number: nil, button: "reject")
            try await Self.waitForOutcome(browser, rejected.event.ID, "Rejected")
            #expect(try await broker.backend.event(id: rejected.event.ID).status == .rejected)

            // A wrong number is refused, counted, and the request still waits.
            let wrong = try await broker.backend.requestApproval(user: "alice", details: "Pay 10 EUR")
            let number = try #require(wrong.matchNumber)
            let other = number == "10" ? "11" : "10"
            try await Self.answer(browser, wrong.event.ID, number: other, button: "approve")
            try await browser.waitFor(text: "Wrong number")
            #expect(try await browser.text("\(Self.card(wrong.event.ID)) .error").contains("2 tries left"))
            #expect(try await broker.backend.event(id: wrong.event.ID).status == .pending)

            // Nobody answers: the card says it expired.
            try await Self.waitForOutcome(browser, wrong.event.ID, "Expired", timeout: .seconds(180))

            // "This wasn't me" on one request: it and the other waiting one end.
            let bombed = try await broker.backend.requestApproval(user: "alice", details: "Pay 999 EUR")
            let alsoWaiting = try await broker.backend.requestApproval(user: "alice", details: "Pay 998 EUR")
            try await browser.waitFor(element: Self.card(alsoWaiting.event.ID))
            try await Self.answer(browser, bombed.event.ID, number: nil, button: "fraud")
            try await Self.waitForOutcome(browser, bombed.event.ID, "Reported as not yours")
            try await Self.waitForOutcome(
                browser, alsoWaiting.event.ID, "rejected because another request was reported as not yours")
            #expect(try await broker.backend.event(id: bombed.event.ID).statusReason == .fraudReported)
            #expect(try await broker.backend.event(id: alsoWaiting.event.ID).statusReason == .userProtected)

            // Withdrawn by the machine that asked, then approved on another
            // device: each card ends, keeping only what happened.
            let withdrawn = try await broker.backend.requestApproval(user: "alice", details: "Pay 5 EUR")
            try await browser.waitFor(element: Self.card(withdrawn.event.ID))
            _ = try await CountersignClient(broker: broker.url, apiKeyID: broker.apiKeyID).withdraw(withdrawn)
            try await Self.waitForOutcome(browser, withdrawn.event.ID, "the requesting machine withdrew it")
            let details = try await browser.execute(
                "return getComputedStyle(document.querySelector(\"\(Self.card(withdrawn.event.ID)) dl\")).display")
            #expect("\(details ?? "")" == "none", "an ended card hides its details")
            let elsewhere = try await broker.backend.requestApproval(user: "alice", details: "Pay 6 EUR")
            try await browser.waitFor(element: Self.card(elsewhere.event.ID))
            let approve = try broker.agent(
                ["approve", "--event", elsewhere.event.ID, "--yes", "--match", try #require(elsewhere.matchNumber)],
                configDirectory: laptop)
            #expect(try await approve.exitCode(timeout: .seconds(120)) == 0, "\(approve.text)")
            try await Self.waitForOutcome(browser, elsewhere.event.ID, "approved on another device")

            // Another device of the user, removed from the page.
            try await browser.waitFor(text: "laptop")
            let devices = try await broker.backend.devices(user: "alice")
            let laptopID = try #require(devices.first { $0.name == "laptop" }?.id)
            try await browser.click("li[data-device-id='\(laptopID)'] button")
            try await browser.acceptDialog()
            try await browser.waitFor(text: "laptop was removed")
            #expect(try await broker.backend.devices(user: "alice").first { $0.id == laptopID }?.revokedAt != nil)

            // The backend removes this device: the page says so.
            let selfID = try #require(devices.first { $0.type == "browser" }?.id)
            _ = try await broker.backend.revokeDevice(user: "alice", deviceID: selfID)
            // The section is in the page from the start, hidden: wait for it to show.
            try await browser.waitFor(element: "#removed:not([hidden])", timeout: .seconds(60))
            #expect(try await browser.text("#removed h2") == "This device was removed")
            try await Self.save(browser, "desktop-removed")
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }
}
