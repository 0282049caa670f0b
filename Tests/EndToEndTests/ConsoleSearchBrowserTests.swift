import CountersignClient
import Foundation
import Testing

/// The console's dashboard, user list and event search in a real
/// Chromium, at 1280 px and on a phone's width.
@Suite("end to end: the console's dashboard and searches in a browser", .serialized)
struct ConsoleSearchBrowserTests {
    typealias Console = ConsoleBrowserTests

    /// Whether no table heading breaks over two lines, and the page does
    /// not scroll sideways (a wide table scrolls in its own box).
    static func readable(_ browser: WebDriver) async throws -> String? {
        let script = """
            const broken = [...document.querySelectorAll('th')].filter((th) => th.offsetParent !== null
              && th.getClientRects().length > 0 && th.offsetHeight > 2.2 * parseFloat(getComputedStyle(th).fontSize) + 12)
              .map((th) => th.textContent);
            if (broken.length) return 'headings broken: ' + broken.join(', ');
            if (document.documentElement.scrollWidth > window.innerWidth + 1)
              return 'the page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + window.innerWidth;
            return null;
            """
        return try await browser.execute(script) as? String
    }

    @Test("the dashboard counts the last hour and opens the events it counts; the search filters, pages and exports")
    func dashboardAndSearch() async throws {
        let broker = try await Console.startBroker()
        defer { broker.stop() }
        let operatorDevice = try await Console.addOperator(broker, "alice")
        for user in ["amy", "amelia", "bert"] { _ = try await broker.enrollDevice(user: user) }
        for index in 0..<3 {
            _ = try await broker.backend.requestApproval(
                user: "amy", details: "Pay \(index + 1)00 EUR", ip: index == 1 ? "203.0.113.7" : "192.0.2.10")
        }
        let browser = try await WebDriver.start(width: 1280, height: 900)
        do {
            try await Console.signIn(browser, broker, as: "alice", device: operatorDevice)
            try await browser.waitFor(text: "The last hour", timeout: .seconds(60))
            try await WebApproverBrowserTests.save(browser, "console-dashboard")
            let dashboard = try await browser.text("#dashboard-result")
            #expect(dashboard.contains("All clear") || dashboard.contains("Worth a look"), "\(dashboard)")
            // Three events of amy and the console's own sign-in.
            #expect(
                try await browser.execute(
                    "return document.querySelector('#dashboard-result .figure .value').textContent") as? String
                    == "4", "\(dashboard)")
            #expect(try await Self.readable(browser) == nil)
            // Times say their zone on hover.
            let title = try await browser.execute(
                "return document.querySelector('#dashboard-result time, #dashboard-result .banner')?.textContent ?? ''")
            #expect((title as? String)?.isEmpty == false)

            // "pending" opens the events it counts.
            _ = try await browser.execute(
                "[...document.querySelectorAll('#dashboard-result .figure')].find((f) => f.textContent.includes('pending')).click()"
            )
            try await browser.waitFor(element: "#event-result tbody tr")
            #expect(
                try await browser.execute("return document.querySelector('#event-status').value") as? String
                    == "pending")
            #expect(
                try await browser.execute("return document.querySelectorAll('#event-result tbody tr').length") as? Int
                    == 3)
            let zone = try await browser.execute("return document.querySelector('#event-result time').title") as? String
            #expect(zone?.contains("UTC") == true || zone?.contains("GMT") == true, "\(zone ?? "")")
            try await WebApproverBrowserTests.save(browser, "console-events")
            #expect(try await Self.readable(browser) == nil)

            // By address, and the download is of what the search finds.
            try await browser.type("203.0.113.7", into: "#event-address")
            try await browser.click("#event-search button[type=submit]")
            try await browser.waitUntil("one event from the address") {
                try await browser.execute("return document.querySelectorAll('#event-result tbody tr').length") as? Int
                    == 1
            }
            #expect(try await browser.text("#event-result").contains("Pay 200 EUR"))
            let csv =
                try await browser.execute(
                    "fetch(document.querySelector('#event-export-csv').href).then((r) => r.text()).then(arguments[0])",
                    async: true) as? String ?? ""
            let lines = csv.split(separator: "\r\n")
            #expect(lines.count == 2 && lines[1].contains("203.0.113.7") && lines[1].contains("amy"), "\(csv)")

            // A user's name in the results opens their page.
            try await browser.click("#event-result a")
            try await browser.waitFor(element: "#user-result h2")
            #expect(try await browser.text("#user-result h2") == "amy")

            // The user list follows what is typed.
            try await browser.type("am", into: "#user-prefix")
            try await browser.waitUntil("amelia and amy listed") {
                try await browser.execute("return document.querySelectorAll('#user-list tbody tr').length") as? Int
                    == 2
            }
            #expect(try await browser.text("#user-list").contains("amelia"))

            // On a phone: the same views, nothing wider than the screen.
            _ = try await browser.cdp(
                "Emulation.setDeviceMetricsOverride",
                ["width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": true])
            try await browser.click("nav button[data-view=dashboard]")
            try await browser.waitFor(text: "The last day")
            try await WebApproverBrowserTests.save(browser, "console-dashboard-phone")
            #expect(try await Self.readable(browser) == nil)
            try await browser.click("nav button[data-view=events]")
            try await browser.waitFor(element: "#event-result tbody tr")
            #expect(try await Self.readable(browser) == nil)
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }
}
