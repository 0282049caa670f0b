import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Sign-in to an OpenID Connect app by approval in a real headless
/// Chromium: the app is a relying party written with authlib and joserfc
/// (scripts/oidc-rp-browser.py) listening on loopback for its redirect URI,
/// the broker is the real process, and the trusted device is a real
/// `device-agent` or the web approver in a second browser.
@Suite("end to end: sign in to an OpenID Connect app in a real browser", .serialized)
struct OpenIDSignInBrowserTests {
    @Test(
        "approved on a CLI device: the waiting page's own long-poll takes the browser back to the app, signed in; the page's policy allows its one script"
    )
    func approvedOnCLIDevice() async throws {
        let broker = try await LiveBroker.startForBrowser()
        defer { broker.stop() }
        let app = try await Self.demoApp(broker)
        let laptop = try await broker.enrollMachine(name: "laptop")
        let (relyingParty, authorize) = try await Self.relyingParty(broker, app: app)
        defer { relyingParty.stop() }

        // The user name form: a page with no script at all.
        let form = try await Self.get(authorize)
        #expect(form.status == 200, "\(form.body)")
        let formPolicy = Self.directives(form.headers.first(name: "Content-Security-Policy") ?? "")
        #expect(formPolicy["default-src"] == ["'none'"] && formPolicy["script-src"] == nil, "\(formPolicy)")

        let back = try await Self.withBrowser { browser in
            let (number, eventID) = try await Self.startSignIn(browser, authorize, as: "alice")
            #expect(
                try await browser.text("p.lead").contains("To sign in to demo as alice"),
                "the page names the app and the user")
            try await WebApproverBrowserTests.save(browser, "openid-sign-in-waiting")

            // The attempt is held in a cookie no script reads and no other site sends.
            let name = "countersign_sign_in_\(eventID)"
            let cookies = try await browser.cookies()
            let cookie = try #require(cookies.first { $0["name"] as? String == name }, "\(cookies)")
            #expect(cookie["httpOnly"] as? Bool == true && cookie["sameSite"] as? String == "Strict", "\(cookie)")
            #expect(try await browser.execute("return document.cookie") as? String == "")
            let held = try await Self.allCookies(browser).compactMap { $0["name"] as? String }
            #expect(held.contains(name), "the browser holds it: \(held)")

            // The waiting page's policy, as the browser got it (read here with
            // the browser's cookie): its own script, its own polls, nothing else.
            let value = try #require(cookie["value"] as? String)
            let waiting = try await Self.get(broker.url + "/oauth/sign-in?id=\(eventID)", cookie: "\(name)=\(value)")
            #expect(waiting.status == 200 && waiting.body.contains(#"id="number">\#(number)<"#), "\(waiting.body)")
            let header = waiting.headers.first(name: "Content-Security-Policy") ?? ""
            let policy = Self.directives(header)
            #expect(policy["script-src"] == ["'self'"], "only the page's own script file: \(header)")
            #expect(policy["connect-src"] == ["'self'"] && policy["default-src"] == ["'none'"], "\(header)")
            #expect(policy["frame-ancestors"] == ["'none'"], "\(header)")
            #expect(!header.contains("unsafe-eval") && !header.contains("unsafe-hashes"), "\(header)")
            #expect(policy["script-src"]?.contains("'unsafe-inline'") != true, "\(header)")
            let script = try await Self.get(broker.url + "/oauth/sign-in.js")
            #expect(script.status == 200, "\(script.body)")
            #expect(
                script.headers.first(name: "Content-Type")?.hasPrefix("text/javascript") == true
                    && script.headers.first(name: "X-Content-Type-Options") == "nosniff", "\(script.headers)")

            // The page's script holds a long-poll of the sign-in's status
            // (nothing else polls yet): no refresh of the page is needed.
            try await broker.waitUntilHolding(1)
            // As a person at the device answers: yes, then the number.
            let approve = try broker.agent(
                ["approve", "--timeout", "60"], configDirectory: laptop, stdin: "y\n\(number)\n")
            #expect(try await approve.exitCode(timeout: .seconds(120)) == 0, "\(approve.text)")
            #expect(approve.text.contains("Chrome on Linux"), "the device sees which browser asks:\n\(approve.text)")
            #expect(approve.text.contains("Sign in to demo in a web browser"), "\(approve.text)")

            let back = try await Self.waitForApp(browser, app, saying: "Signed in as alice")
            let left = try await Self.allCookies(browser).compactMap { $0["name"] as? String }
            #expect(!left.contains(name), "the attempt's cookie is cleared: \(left)")
            return back
        }
        #expect(back["code"]?.isEmpty == false, "the code comes back: \(back)")
        #expect(back["iss"] == broker.url && back["state"]?.isEmpty == false, "\(back)")
        #expect(try await relyingParty.exitCode(timeout: .seconds(120)) == 0, "\(relyingParty.text)")
        let outcome = try Self.result(of: relyingParty)
        try Self.expectSignedIn(outcome, app: app, user: "alice")
        #expect(outcome["scope"] as? String == "openid profile", "\(outcome)")
    }

    @Test("approved on the web approver: the sign-in page in one browser, the approver in another")
    func approvedOnWebApprover() async throws {
        let broker = try await LiveBroker.startForBrowser()
        defer { broker.stop() }
        let app = try await Self.demoApp(broker)
        let (relyingParty, authorize) = try await Self.relyingParty(broker, app: app)
        defer { relyingParty.stop() }
        let token = try await broker.backend.createEnrollmentToken(user: "alice").token

        let back = try await Self.withBrowser(width: 390, height: 844) { approver in
            // alice's one trusted device: the web approver, added by the app's link.
            try await approver.open("\(broker.url)/approve/#enroll=\(token)&user=alice&api_key=\(app.id)")
            try await approver.waitFor(element: "#setup:not([hidden]) #setup-button", timeout: .seconds(60))
            try await approver.click("#setup-button")
            try await approver.waitFor(text: "trusted device of alice", timeout: .seconds(60))
            let devices = try await broker.backend.devices(user: "alice")
            #expect(devices.count == 1 && devices.first?.type == "browser", "\(devices)")

            return try await Self.withBrowser { browser in
                let (number, eventID) = try await Self.startSignIn(browser, authorize, as: "alice")
                let pending = try await broker.backend.events(user: "alice", status: .pending)
                let login = try #require(pending.first { $0.event == EventName.login }, "\(pending)")
                #expect(login.ID == eventID, "the page waits for the login the device is asked")
                let card = WebApproverBrowserTests.card(login.ID)
                try await approver.waitFor(element: "\(card) .left:not(:empty)", timeout: .seconds(60))
                let shown = try await approver.text(card)
                #expect(
                    shown.contains("Chrome on Linux") && shown.contains("Sign in to demo in a web browser"),
                    "the approver sees which browser asks:\n\(shown)")
                try await WebApproverBrowserTests.save(approver, "openid-sign-in-approver")
                try await WebApproverBrowserTests.answer(approver, login.ID, number: number, button: "approve")
                try await WebApproverBrowserTests.waitForOutcome(approver, login.ID, "Approved")
                return try await Self.waitForApp(browser, app, saying: "Signed in as alice")
            }
        }
        #expect(back["code"]?.isEmpty == false && back["iss"] == broker.url, "\(back)")
        #expect(try await relyingParty.exitCode(timeout: .seconds(120)) == 0, "\(relyingParty.text)")
        try Self.expectSignedIn(try Self.result(of: relyingParty), app: app, user: "alice")
    }

    @Test(
        "an app name and a user name with markup are shown as text on every page, nothing runs, and the name signs in as itself"
    )
    func hostileValuesAreInert() async throws {
        let broker = try await LiveBroker.startForBrowser()
        defer { broker.stop() }
        let name = "<img src=x onerror=alert(1)>"
        let app = try await Self.createApp(broker, name: name)
        // A user name takes no slash: "<b>bob</b>" is refused; this one is not.
        let user = "<img src=y onerror=alert(2)>bob"
        let laptop = try await Self.enrollMachine(broker, app: app, user: user)
        let (relyingParty, authorize) = try await Self.relyingParty(broker, app: app)
        defer { relyingParty.stop() }

        let back = try await Self.withBrowser { browser in
            try await Self.trapAlerts(browser)
            try await browser.open(authorize)
            try await browser.waitFor(element: "#user", timeout: .seconds(60))
            #expect(try await browser.text("p.lead").contains("Sign in to \(name) by approving"))
            #expect(try await browser.execute("return document.title") as? String == "Sign in to \(name) · Countersign")
            #expect(try await browser.text("h1") == "Sign in to \(name)")
            let lead = try await browser.execute("return document.querySelector('p.lead').innerHTML") as? String
            #expect(lead?.contains("&lt;img src=x onerror=alert(1)&gt;") == true, "\(lead ?? "")")
            #expect(try await browser.execute("return document.querySelectorAll('main img').length") as? Int == 0)

            // A name with markup and a slash: refused, and not put back as markup.
            try await browser.type("<b>bob</b>", into: "#user")
            try await browser.click("form[action='/oauth/sign-in'] button[type=submit]")
            try await browser.waitFor(element: "p.error", timeout: .seconds(60))
            #expect(
                try await browser.execute("return document.querySelectorAll('main b, main img').length") as? Int == 0)

            try await browser.type(user, into: "#user")
            try await browser.click("form[action='/oauth/sign-in'] button[type=submit]")
            try await browser.waitFor(element: "#number", timeout: .seconds(60))
            let number = try await browser.text("#number")
            let waiting = try await browser.text("p.lead")
            #expect(waiting.contains("To sign in to \(name) as \(user),"), "as text: \(waiting)")
            let waitingHTML =
                try await browser.execute("return document.querySelector('p.lead').innerHTML") as? String ?? ""
            #expect(
                waitingHTML.contains("&lt;img src=x onerror=alert(1)&gt;")
                    && waitingHTML.contains("&lt;img src=y onerror=alert(2)&gt;bob"), "\(waitingHTML)")
            #expect(try await browser.execute("return document.querySelectorAll('main img').length") as? Int == 0)
            try await WebApproverBrowserTests.save(browser, "openid-sign-in-hostile")
            #expect(try await Self.alerted(browser) == false, "no script of the names ran")

            let approve = try Self.agent(
                broker, app: app, ["approve", "--timeout", "60"], laptop, user, stdin: "y\n\(number)\n")
            #expect(try await approve.exitCode(timeout: .seconds(120)) == 0, "\(approve.text)")
            let back = try await Self.waitForApp(browser, app, saying: "Signed in as \(user)")
            #expect(try await Self.alerted(browser) == false)
            return back
        }
        #expect(back["code"]?.isEmpty == false, "\(back)")
        #expect(try await relyingParty.exitCode(timeout: .seconds(120)) == 0, "\(relyingParty.text)")
        try Self.expectSignedIn(try Self.result(of: relyingParty), app: app, user: user)
    }

    @Test("Cancel on the waiting page: back at the app with access_denied, and the device has nothing left to answer")
    func cancel() async throws {
        let broker = try await LiveBroker.startForBrowser()
        defer { broker.stop() }
        let app = try await Self.demoApp(broker)
        let laptop = try await broker.enrollMachine(name: "laptop")
        let (relyingParty, authorize) = try await Self.relyingParty(broker, app: app)
        defer { relyingParty.stop() }

        let (back, eventID, number) = try await Self.withBrowser { browser in
            let (number, eventID) = try await Self.startSignIn(browser, authorize, as: "alice")
            let pending = try await broker.backend.events(user: "alice", status: .pending)
            #expect(pending.map(\.ID) == [eventID], "the one login the page waits for")
            try await browser.click("form[action='/oauth/sign-in/cancel'] button")
            let back = try await Self.waitForApp(browser, app, saying: "Error: access_denied")
            // The attempt is over in this browser too: its cookie is gone.
            let left = try await Self.allCookies(browser).compactMap { $0["name"] as? String }
            #expect(!left.contains("countersign_sign_in_\(eventID)"), "\(left)")
            try await browser.open(broker.url + "/oauth/sign-in?id=\(eventID)")
            try await browser.waitFor(text: "No sign-in is waiting in this browser", timeout: .seconds(60))
            return (back, eventID, number)
        }
        #expect(back["error"] == "access_denied" && back["code"] == nil, "\(back)")
        #expect(back["iss"] == broker.url && back["state"]?.isEmpty == false, "\(back)")
        #expect(try await relyingParty.exitCode(timeout: .seconds(120)) == 0, "\(relyingParty.text)")
        let outcome = try Self.result(of: relyingParty)
        #expect(
            outcome["outcome"] as? String == "error" && outcome["error"] as? String == "access_denied", "\(outcome)")
        #expect(outcome["state_ok"] as? Bool == true && outcome["iss_ok"] as? Bool == true, "\(outcome)")

        // Withdrawn: the device has nothing to answer, by id or by waiting.
        let event = try await broker.backend.event(id: eventID)
        #expect(event.status == .expired && event.statusReason == .withdrawn, "\(event)")
        let byID = try broker.agent(
            ["approve", "--event", eventID, "--yes", "--match", number], configDirectory: laptop)
        #expect(try await byID.exitCode(timeout: .seconds(120)) == 6, "\(byID.text)")
        #expect(byID.text.contains("was withdrawn by the machine that asked"), "\(byID.text)")
        let waiting = try broker.agent(["approve", "--timeout", "3"], configDirectory: laptop)
        #expect(try await waiting.exitCode(timeout: .seconds(120)) == 5, "nothing arrives:\n\(waiting.text)")
    }
}
