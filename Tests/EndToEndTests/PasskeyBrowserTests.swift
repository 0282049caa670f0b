import CountersignClient
import CountersignCore
import Foundation
import Testing

/// Approvals only the device's owner can give: the web approver in a real
/// Chromium makes and uses a passkey on a virtual authenticator (WebDriver's
/// WebAuthn extension), against a real broker and `device-agent` processes.
@Suite("end to end: passkeys in the web approver", .serialized)
struct PasskeyBrowserTests {
    static let card = WebApproverBrowserTests.card

    /// The broker at `localhost`, its RP ID: WebAuthn takes no address.
    static func local(_ broker: LiveBroker) -> String {
        broker.url.replacingOccurrences(of: "//127.0.0.1:", with: "//localhost:")
    }

    /// Pairs the browser's page (at the broker's localhost origin) with the CLI device `laptop`.
    static func pair(_ browser: WebDriver, _ broker: LiveBroker, laptop: URL) async throws {
        try await browser.open("\(local(broker))/approve/#pair&api_key=\(broker.apiKeyID)&user=alice")
        try await browser.waitFor(element: "#setup:not([hidden]) #setup-button")
        try await browser.click("#setup-button")
        try await browser.waitFor(element: "#pairing-code:not(:empty)")
        let code = try await browser.text("#pairing-code")
        let pairing = try #require(try await broker.backend.events(user: "alice", status: .pending).first)
        let approve = try broker.agent(
            ["approve", "--event", pairing.ID, "--yes", "--match", code], configDirectory: laptop)
        #expect(try await approve.exitCode() == 0, "\(approve.text)")
        try await browser.waitFor(text: "trusted device of alice")
    }

    /// Runs `body` with a broker, a CLI device `laptop` of alice's, and a
    /// browser with a virtual authenticator whose page was paired by it;
    /// a failure leaves a screenshot named `failure`.
    static func withPairedBrowser(
        _ failure: String, _ body: (LiveBroker, URL, WebDriver, String) async throws -> Void
    ) async throws {
        let broker = try await LiveBroker.startForBrowser()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let browser = try await WebDriver.start()
        do {
            let authenticator = try await browser.addVirtualAuthenticator()
            try await pair(browser, broker, laptop: laptop)
            try await body(broker, laptop, browser, authenticator)
        } catch {
            try? await WebApproverBrowserTests.save(browser, failure)
            await browser.quit()
            throw error
        }
        await browser.quit()
    }

    /// The error a card shows, once it shows one.
    static func waitForError(_ browser: WebDriver, _ eventID: String) async throws -> String {
        var shown = ""
        try await browser.waitUntil("an error on the card of \(eventID)") {
            shown = (try? await browser.text("\(card(eventID)) .error")) ?? ""
            return !shown.isEmpty
        }
        return shown
    }

    /// The decision `eventID` signed on the page by its own (unexportable)
    /// key, sent with `assertion`: what a script that took over the page
    /// could send without the owner's fingerprint. The decision is
    /// `decision` if given (one made by ``decisionFromPage(_:_:_:)``), else
    /// a new approval.
    static func sendFromPage(
        _ browser: WebDriver, _ eventID: String, decision given: String? = nil, assertion: String
    ) async throws -> String {
        var jws = given ?? ""
        if given == nil { jws = try await decisionFromPage(browser, eventID, "approve") }
        return try await browser.execute(
            """
            const done = arguments[0];
            (async () => {
              const { Broker } = await import("./broker.js");
              try {
                await new Broker(location.origin).request("POST", "/api/v1/events/\(eventID)/decision",
                  { body: { decision: "\(jws)", assertion: \(assertion) } });
                done("accepted");
              } catch (error) {
                done(`${error.code}: ${error.message}`);
              }
            })();
            """, async: true) as? String ?? ""
    }

    /// A decision on `eventID` (`verdict` "approve" or "reject") signed on
    /// the broker's page by the device's own key, as the page makes one,
    /// but not sent.
    static func decisionFromPage(_ browser: WebDriver, _ eventID: String, _ verdict: String) async throws -> String {
        let made =
            try await browser.execute(
                """
                const done = arguments[0];
                (async () => {
                  const { loadAccount } = await import("./account.js");
                  const { Broker } = await import("./broker.js");
                  const { decision, shownDigest, shownRequest } = await import("./keys.js");
                  const account = await loadAccount();
                  const broker = new Broker(location.origin);
                  const item = (await broker.inbox(account, 0, null)).events.find((i) => i.event.ID === "\(eventID)");
                  done(await decision(account.privateKey, account.deviceID, {
                    eventID: item.event.ID, nonce: item.nonce, verdict: "\(verdict)",
                    shown: await shownDigest(shownRequest(item)), audience: broker.origin, now: broker.now(),
                  }));
                })().catch((error) => done(`failed: ${error}`));
                """, async: true) as? String ?? ""
        guard made.split(separator: ".").count == 3 else { throw ProcessFailure("no decision: \(made)") }
        return made
    }

    /// An assertion of the passkey `credentialID` over `decision`, made by
    /// whatever page the browser shows, with nothing of the approver's
    /// code: the challenge is SHA-256 of the decision's signing input and
    /// the answer has the wire's fields, as passkeys.js has them. Returns it
    /// as JSON.
    static func assertionOnPage(_ browser: WebDriver, over decision: String, credentialID: String) async throws
        -> String
    {
        let made =
            try await browser.execute(
                """
                const [decision, credentialID, done] = arguments;
                const decode = (text) => Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")),
                  (character) => character.charCodeAt(0));
                const encode = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer)))
                  .replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
                (async () => {
                  const input = new TextEncoder().encode(decision.split(".").slice(0, 2).join("."));
                  const credential = await navigator.credentials.get({
                    publicKey: {
                      challenge: new Uint8Array(await crypto.subtle.digest("SHA-256", input)),
                      allowCredentials: [{ type: "public-key", id: decode(credentialID) }],
                      userVerification: "required",
                      timeout: 60_000,
                    },
                  });
                  done({ assertion: JSON.stringify({
                    credential_id: encode(credential.rawId),
                    authenticator_data: encode(credential.response.authenticatorData),
                    client_data_json: encode(credential.response.clientDataJSON),
                    signature: encode(credential.response.signature),
                  }) });
                })().catch((error) => done({ error: `${error.name}: ${error.message}` }));
                """, async: true, arguments: [decision, credentialID]) as? [String: Any] ?? [:]
        guard let assertion = made["assertion"] as? String else {
            throw ProcessFailure("the browser made no assertion at \(try await browser.currentURL): \(made)")
        }
        return assertion
    }

    /// The origin and challenge a browser wrote into an assertion's client data.
    static func collected(_ assertion: String) throws -> (origin: String, challenge: String) {
        let wire = try JSONDecoder().decode(PasskeyAssertion.self, from: Data(assertion.utf8))
        let json = try #require(Base64URL.decode(wire.clientDataJSON))
        let fields = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        return (fields["origin"] as? String ?? "", fields["challenge"] as? String ?? "")
    }

    /// Another site's page on `localhost` (so under the broker's RP ID, but
    /// not the broker's origin): Python's http.server on a port of its own
    /// choosing, serving an empty directory. Returns it and its origin.
    static func otherPage() async throws -> (server: RunningProcess, origin: String) {
        let server = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory",
                try temporaryDirectory("other-site").path,
            ])
        // It prints its port once the socket listens.
        let port = try await server.waitFor(#"Serving HTTP on \S+ port (\d+)"#, timeout: .seconds(60))
        return (server, "http://localhost:\(port)")
    }

    @Test(
        "a passkey made at pairing approves a login that requires it; no verification, a replayed assertion and a counter that goes back are refused; the backend proves it afterwards"
    )
    func approveWithScreenLock() async throws {
        try await Self.withPairedBrowser("passkey-failure") { broker, laptop, browser, authenticator in

            // Before the passkey: the request is seen, cannot be approved here, and can be rejected.
            let first = try await broker.backend.requestApproval(
                user: "alice", details: "Pay 40.00 EUR to ACME", numberMatching: false, userVerification: true)
            try await browser.waitFor(element: Self.card(first.event.ID))
            let card = try await browser.text(Self.card(first.event.ID))
            #expect(card.contains("must be approved on a device that can verify you"), "\(card)")
            #expect(
                try await browser.execute(
                    "return document.querySelector(\"\(Self.card(first.event.ID)) button[name=approve]\").hidden")
                    as? Bool == true, "no Approve button without a passkey")
            #expect(!card.contains(first.event.ID), "no raw event id on the card")
            // The CLI device, which has no passkey either, is refused.
            let cli = try broker.agent(
                ["approve", "--event", first.event.ID, "--yes"], configDirectory: laptop)
            #expect(try await cli.exitCode() != 0)
            #expect(cli.text.contains("not approved: this request must be approved with a passkey"), "\(cli.text)")
            #expect(try await broker.backend.event(id: first.event.ID).status == .pending)
            try await browser.click("\(Self.card(first.event.ID)) button[name=reject]")
            try await WebApproverBrowserTests.waitForOutcome(browser, first.event.ID, "Rejected")
            #expect(try await broker.backend.event(id: first.event.ID).status == .rejected)

            // Offered at pairing: the screen lock protects approvals from now on.
            try await browser.waitFor(element: "#screen-lock:not([hidden]) #screen-lock-on:not([hidden])")
            try await WebApproverBrowserTests.save(browser, "phone-screen-lock-offer")
            try await browser.click("#screen-lock-on")
            try await browser.waitFor(text: "On: requests that ask for it")
            let credentials = try await browser.credentials(authenticator)
            #expect(credentials.count == 1)
            let devices = try await broker.backend.devices(user: "alice")
            let phone = try #require(devices.first { $0.type == "browser" })
            let passkey = try #require(phone.passkey, "the broker keeps the passkey on the browser's device")
            #expect(passkey.credentialID == credentials.first?["credentialId"] as? String)

            // The authenticator does not verify its user: nothing is approved.
            let login = try await broker.backend.requestApproval(
                user: "alice", event: EventName.login, numberMatching: false, requesterName: "machine-B",
                userVerification: true)
            try await browser.waitFor(element: Self.card(login.event.ID))
            #expect(try await browser.text(Self.card(login.event.ID)).contains("asks for this"))
            try await WebApproverBrowserTests.save(browser, "phone-request-screen-lock")
            try await browser.setUserVerified(authenticator, false)
            try await browser.click("\(Self.card(login.event.ID)) button[name=approve]")
            let unverified = try await Self.waitForError(browser, login.event.ID)
            #expect(unverified.contains("screen lock") || unverified.contains("verif"), "\(unverified)")
            #expect(try await broker.backend.event(id: login.event.ID).status == .pending)

            // Verified: approved, with the assertion kept beside the decision.
            try await browser.setUserVerified(authenticator, true)
            try await browser.click("\(Self.card(login.event.ID)) button[name=approve]")
            try await WebApproverBrowserTests.waitForOutcome(browser, login.event.ID, "Approved")
            let approved = try await broker.backend.event(id: login.event.ID)
            #expect(approved.status == .approved && approved.userVerification == "required")
            let assertion = try #require(approved.assertion)
            #expect(assertion.credentialID == passkey.credentialID)

            // The backend proves it from the stored decision alone: the SDK,
            // and py_webauthn through scripts/verify-decision.py.
            let backend = CountersignBackend(
                broker: Self.local(broker), apiKeyID: broker.apiKeyID, apiSecretKey: broker.apiSecret)
            let claims = try await backend.verifyDecision(
                of: approved, app: "demo", pinnedKeys: devices.map(\.publicKey), pinnedPasskeys: [phone.id: [passkey]])
            #expect(claims.evt == login.event.ID)
            let pinned = try temporaryDirectory("pinned").appendingPathComponent("devices.json")
            try WireCoding.encoder().encode(["devices": devices]).write(to: pinned)
            let check = DecisionCheckEndToEndTests()
            let (status, text) = try await check.python(approved, keys: pinned, app: "demo", broker: Self.local(broker))
            #expect(status == 0, "\(text)")
            // Without the assertion, or with another's signature, it proves nothing.
            var stripped = approved
            stripped.assertion = nil
            await #expect(throws: ProtocolError(.userNotVerified, "")) {
                try await backend.verifyDecision(
                    of: stripped, app: "demo", pinnedKeys: devices.map(\.publicKey),
                    pinnedPasskeys: [phone.id: [passkey]]
                )
            }
            #expect(try await check.python(stripped, keys: pinned, app: "demo", broker: Self.local(broker)).0 == 1)

            // A replayed assertion: this login's, sent with a decision on another request.
            let second = try await broker.backend.requestApproval(
                user: "alice", numberMatching: false, userVerification: true)
            try await browser.waitFor(element: Self.card(second.event.ID))
            let replayJSON = String(decoding: try WireCoding.encoder().encode(assertion), as: UTF8.self)
            let replayed = try await Self.sendFromPage(browser, second.event.ID, assertion: replayJSON)
            #expect(replayed.hasPrefix("invalid_decision") && replayed.contains("challenge"), "\(replayed)")
            // Without any: refused for that.
            let bare = try await Self.sendFromPage(browser, second.event.ID, assertion: "undefined")
            #expect(bare.hasPrefix("user_verification_required"), "\(bare)")

            // A copy of the passkey taken earlier: its counter does not go up.
            let held = try #require(try await browser.credentials(authenticator).first)
            let count = try #require(held["signCount"] as? Int)
            try await browser.setSignCount(authenticator, of: held, to: count - 1)
            try await browser.click("\(Self.card(second.event.ID)) button[name=approve]")
            let cloned = try await Self.waitForError(browser, second.event.ID)
            #expect(cloned.contains("counter"), "\(cloned)")
            #expect(try await broker.backend.event(id: second.event.ID).status == .pending)
        }
    }

    @Test(
        "an assertion for another verdict, or made at another origin of the RP ID, is refused; a fresh one approves"
    )
    func otherVerdictAndOrigin() async throws {
        try await Self.withPairedBrowser("passkey-origins-failure") { broker, _, browser, _ in
            try await browser.click("#screen-lock-on")
            try await browser.waitFor(text: "On: requests that ask for it")
            let phone = try #require(try await broker.backend.devices(user: "alice").first { $0.type == "browser" })
            let passkey = try #require(phone.passkey)
            let ticket = try await broker.backend.requestApproval(
                user: "alice", details: "Pay 900.00 EUR to Mallory", numberMatching: false, userVerification: true)
            let eventID = ticket.event.ID
            try await browser.waitFor(element: Self.card(eventID))

            // Another verdict: the owner's fingerprint given to reject the
            // request, sent with an approval of it.
            let rejection = try await Self.decisionFromPage(browser, eventID, "reject")
            let forRejection = try await Self.assertionOnPage(
                browser, over: rejection, credentialID: passkey.credentialID)
            #expect(
                try Self.collected(forRejection).challenge
                    == Base64URL.encode(try PasskeyAssertion.challenge(for: rejection)))
            let approval = try await Self.decisionFromPage(browser, eventID, "approve")
            let swapped = try await Self.sendFromPage(
                browser, eventID, decision: approval, assertion: forRejection)
            #expect(
                swapped == "invalid_decision: wrong_challenge: the passkey signed another challenge than this one",
                "\(swapped)")
            #expect(try await broker.backend.event(id: eventID).status == .pending)

            // Another origin: a page of another site on localhost asks the
            // same authenticator, which holds the passkey for the RP ID
            // localhost, for an assertion over this very approval.
            let (server, origin) = try await Self.otherPage()
            defer { server.stop() }
            let elsewhere = try await Self.decisionFromPage(browser, eventID, "approve")
            try await browser.open("\(origin)/")
            let made = try await Self.assertionOnPage(browser, over: elsewhere, credentialID: passkey.credentialID)
            let collected = try Self.collected(made)
            #expect(collected.origin == origin, "the browser made it there: \(collected)")
            #expect(
                collected.challenge == Base64URL.encode(try PasskeyAssertion.challenge(for: elsewhere)),
                "over the approval's own challenge")
            try await browser.open("\(Self.local(broker))/approve/")
            try await browser.waitFor(element: Self.card(eventID))
            let foreign = try await Self.sendFromPage(browser, eventID, decision: elsewhere, assertion: made)
            #expect(
                foreign == "invalid_decision: wrong_origin: the passkey was used on \(origin), not this broker's page",
                "\(foreign)")
            #expect(try await broker.backend.event(id: eventID).status == .pending)

            // The owner, on the broker's page: approved, with an assertion made there.
            try await browser.click("\(Self.card(eventID)) button[name=approve]")
            try await WebApproverBrowserTests.waitForOutcome(browser, eventID, "Approved")
            let approved = try await broker.backend.event(id: eventID)
            #expect(approved.status == .approved)
            let kept = try WireCoding.encoder().encode(try #require(approved.assertion))
            #expect(try Self.collected(String(decoding: kept, as: UTF8.self)).origin == Self.local(broker))
        }
    }

    @Test("under a key that requires user verification the page removes another device with the screen lock")
    func removeUnderPolicy() async throws {
        try await Self.withPairedBrowser("passkey-remove-failure") { broker, _, browser, authenticator in
            try await browser.click("#screen-lock-on")
            try await browser.waitFor(text: "On: requests that ask for it")
            let policy = try RunningProcess(
                "device-broker",
                ["apikey", "set-user-verification", broker.apiKeyID, "required"] + broker.storeArguments)
            #expect(try await policy.exitCode() == 0, "\(policy.text)")
            let laptopID = try #require(
                try await broker.backend.devices(user: "alice").first { $0.name == "laptop" }?.id)
            // Whoever holds the unlocked phone, failing its fingerprint check: nothing removed.
            try await browser.setUserVerified(authenticator, false)
            try await browser.waitFor(element: "li[data-device-id='\(laptopID)'] button")
            try await browser.click("li[data-device-id='\(laptopID)'] button")
            try await browser.acceptDialog()
            try await browser.waitUntil("the refusal") {
                ((try? await browser.text("#status")) ?? "").contains("screen lock")
            }
            #expect(try await broker.backend.devices(user: "alice").first { $0.id == laptopID }?.revokedAt == nil)
            // The owner. (The page lists the devices again after the refusal.)
            try await browser.setUserVerified(authenticator, true)
            try await browser.waitFor(element: "li[data-device-id='\(laptopID)'] button")
            try await browser.click("li[data-device-id='\(laptopID)'] button")
            try await browser.acceptDialog()
            try await browser.waitFor(text: "laptop was removed")
            #expect(try await broker.backend.devices(user: "alice").first { $0.id == laptopID }?.revokedAt != nil)
        }
    }

    @Test("the screen lock is turned off only with the screen lock, and then approvals that need it are refused")
    func turnOff() async throws {
        try await Self.withPairedBrowser("passkey-off-failure") { broker, _, browser, authenticator in
            try await browser.click("#screen-lock-on")
            try await browser.waitFor(text: "On: requests that ask for it")
            // Whoever holds the unlocked phone cannot pass its fingerprint check.
            try await browser.setUserVerified(authenticator, false)
            try await browser.click("#screen-lock-off")
            try await browser.acceptDialog()
            // Said beside the button, not at the top of the page.
            try await browser.waitUntil("the refusal") {
                ((try? await browser.text("#screen-lock-error")) ?? "").contains("Not turned off")
            }
            #expect(try await broker.backend.devices(user: "alice").contains { $0.passkey != nil })
            // The owner can.
            try await browser.setUserVerified(authenticator, true)
            try await browser.click("#screen-lock-off")
            try await browser.acceptDialog()
            try await browser.waitFor(text: "no longer protects approvals")
            #expect(try await broker.backend.devices(user: "alice").allSatisfy { $0.passkey == nil })
            let ticket = try await broker.backend.requestApproval(
                user: "alice", numberMatching: false, userVerification: true)
            try await browser.waitFor(element: Self.card(ticket.event.ID))
            #expect(
                try await browser.text(Self.card(ticket.event.ID)).contains(
                    "must be approved on a device that can verify you"))

            // The card offers the screen lock where it is needed; once on,
            // the same card approves, and the device list says so at once.
            try await browser.click("\(Self.card(ticket.event.ID)) button[name=screen-lock]")
            try await browser.waitFor(element: "\(Self.card(ticket.event.ID)) button[name=approve]:not([hidden])")
            try await browser.waitUntil("the device list names the screen lock") {
                ((try? await browser.text("#device-list")) ?? "").contains("screen lock")
            }
            try await browser.click("\(Self.card(ticket.event.ID)) button[name=approve]")
            try await WebApproverBrowserTests.waitForOutcome(browser, ticket.event.ID, "Approved")
            #expect(try await broker.backend.event(id: ticket.event.ID).status == .approved)
        }
    }

    @Test("a passkey lost from the phone: approving and turning off say how to get out, by removal and pairing")
    func lostPasskey() async throws {
        try await Self.withPairedBrowser("passkey-lost-failure") { broker, _, browser, authenticator in
            try await browser.click("#screen-lock-on")
            try await browser.waitFor(text: "On: requests that ask for it")
            // Deleted in the phone's settings: the broker still holds its key.
            for credential in try await browser.credentials(authenticator) {
                try await browser.removeCredential(authenticator, credential)
            }
            let ticket = try await broker.backend.requestApproval(
                user: "alice", numberMatching: false, userVerification: true)
            try await browser.waitFor(element: Self.card(ticket.event.ID))
            try await browser.click("\(Self.card(ticket.event.ID)) button[name=approve]")
            let shown = try await Self.waitForError(browser, ticket.event.ID)
            #expect(shown.hasPrefix("Not approved.") && !shown.contains("Not sent"), "\(shown)")
            #expect(
                shown.contains("no longer holds its passkey") && shown.contains("pair this browser again"), "\(shown)")
            #expect(try await broker.backend.event(id: ticket.event.ID).status == .pending)

            try await browser.click("#screen-lock-off")
            try await browser.acceptDialog()
            var said = ""
            try await browser.waitUntil("the refusal beside the button") {
                said = (try? await browser.text("#screen-lock-error")) ?? ""
                return said.contains("Not turned off")
            }
            #expect(said.contains("remove this device from another trusted device"), "\(said)")
        }
    }
}
