import Foundation
import Testing

/// The directory's people in the console, in a real Chromium.
@Suite("end to end: the directory in the console's browser view", .serialized)
struct DirectoryBrowserTests {
    @Test("the user list names the directory's people and their state; a suspended person's page says why")
    func console() async throws {
        let slapd = try await SlapdProcess.start()
        let broker = try await ConsoleBrowserTests.startBroker()
        defer {
            broker.stop()
            slapd.stop()
        }
        let operatorDevice = try await ConsoleBrowserTests.addOperator(broker, "alice")
        _ = try await broker.enrollDevice(user: "carol", name: "carol-phone")
        _ = try await DirectoryEndToEndTests.sync(broker, try slapd.settings()).get()
        let browser = try await WebDriver.start(width: 1280, height: 900)
        do {
            try await ConsoleBrowserTests.signIn(browser, broker, as: "alice", device: operatorDevice)
            try await browser.click("nav button[data-view=users]")
            // What an operator types, as they type it.
            func search(_ prefix: String) async throws {
                _ = try await browser.execute(
                    "const field = document.querySelector('#user-prefix'); field.value = arguments[0];"
                        + "field.dispatchEvent(new Event('input'))", arguments: [prefix])
            }
            func listed() async throws -> (rows: Int, text: String) {
                let rows =
                    try await browser.execute("return document.querySelectorAll('#user-list tbody tr').length") as? Int
                return (rows ?? 0, try await browser.text("#user-list"))
            }
            try await search("ca")
            try await browser.waitUntil("carol listed") { try await listed().text.contains("Carol Clark") }
            let carol = try await listed().text
            #expect(carol.contains("disabled: devices suspended"), "\(carol)")
            // bob has no device here, and is listed all the same.
            try await search("b")
            try await browser.waitUntil("bob listed") { try await listed().text.contains("Bob Brown") }
            #expect(try await ConsoleSearchBrowserTests.readable(browser) == nil)

            try await search("carol")
            try await browser.waitUntil("carol alone listed") {
                let (rows, text) = try await listed()
                return rows == 1 && text.contains("carol")
            }
            try await browser.click("#user-list a")
            try await browser.waitFor(element: "#user-result h2")
            let page = try await browser.text("#user-result")
            #expect(page.contains("Carol Clark") && page.contains("carol@example.org"), "\(page)")
            #expect(page.contains("uid=carol,ou=people,dc=example,dc=org") && page.contains("suspended"), "\(page)")
            #expect(!page.contains("Make a link"), "no device is offered for someone suspended")
            try await WebApproverBrowserTests.save(browser, "console-directory-user")
            #expect(try await ConsoleSearchBrowserTests.readable(browser) == nil)

            try await browser.click("nav button[data-view=audit]")
            try await browser.waitFor(element: "#audit-result tbody tr")
            #expect(try await browser.text("#audit-result").contains("suspended by the directory"))
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }
}
