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

/// Invitations in the console, in a real Chromium: a directory group and a
/// person typed in, mailed through the development sender's outbox file.
@Suite("end to end: invitations in the console's browser view", .serialized)
struct InvitationBrowserTests {
    /// The mails the development sender wrote, by address.
    static func mails(_ broker: LiveBroker) throws -> [String: String] {
        let file = broker.dataDirectory.appendingPathComponent("outbox.jsonl")
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return [:] }
        var mails: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
            if object?["type"] == "mail", let to = object?["to"] { mails[to] = object?["text"] }
        }
        return mails
    }

    @Test(
        "a group and a typed person invited after a confirmation; the list reads well at 1280 and 390 px; withdraw asks first"
    )
    func invite() async throws {
        let slapd = try await SlapdProcess.start()
        let broker = try await ConsoleBrowserTests.startBroker()
        defer {
            broker.stop()
            slapd.stop()
        }
        let operatorDevice = try await ConsoleBrowserTests.addOperator(broker, "olivia")
        _ = try await DirectoryEndToEndTests.sync(broker, try slapd.settings()).get()
        let browser = try await WebDriver.start(width: 1280, height: 900)
        do {
            try await ConsoleBrowserTests.signIn(browser, broker, as: "olivia", device: operatorDevice)
            try await browser.click("nav button[data-view=invitations]")
            try await browser.waitFor(element: "#invite-group-field:not([hidden])")
            #expect(try await browser.text("#invite-group").contains("vpn-users (2 people)"))
            _ = try await browser.execute(
                "const group = document.querySelector('#invite-group');"
                    + "group.value = [...group.options].find((o) => o.text.startsWith('vpn-users')).value")
            try await browser.type("erin erin@example.net", into: "#invite-people")
            try await browser.click("#invite-form button[type=submit]")
            try await browser.waitFor(element: "#confirm[open]")
            #expect(try await browser.text("#confirm-text").contains("1 person and everyone in vpn-users"))
            try await browser.click("#confirm-yes")
            try await browser.waitFor(text: "Sent 3 invitations.")
            try await browser.waitUntil("three mails written") { try Self.mails(broker).count == 3 }
            let mails = try Self.mails(broker)
            #expect(Set(mails.keys) == ["alice@example.org", "bob@example.org", "erin@example.net"])
            #expect(mails["erin@example.net"]?.contains("/approve/#enroll=et_") == true)
            try await browser.waitFor(element: "#invite-list tbody tr")
            let list = try await browser.text("#invite-list")
            #expect(list.contains("erin@example.net") && list.contains("by olivia"), "\(list)")
            #expect(try await ConsoleSearchBrowserTests.readable(browser) == nil)
            try await WebApproverBrowserTests.save(browser, "console-invitations")

            // The same group again: nobody mailed twice, and the page says why.
            _ = try await browser.execute(
                "const group = document.querySelector('#invite-group');"
                    + "group.value = [...group.options].find((o) => o.text.startsWith('vpn-users')).value")
            try await browser.click("#invite-form button[type=submit]")
            try await browser.click("#confirm-yes")
            try await browser.waitFor(text: "Sent 0 invitations; 2 not sent (below).")
            #expect(try await browser.text("#invite-refused").contains("an invitation is on its way already"))

            // Withdraw asks first: a no changes nothing.
            let erinRow =
                "[...document.querySelectorAll('#invite-list tbody tr')].find((r) => r.textContent.includes('erin'))"
            _ = try await browser.execute("\(erinRow).querySelector('button.danger').click()")
            try await browser.waitFor(element: "#confirm[open]")
            try await browser.click("#confirm-no")
            #expect(try await browser.text("#invite-list").contains("erin"))
            _ = try await browser.execute("\(erinRow).querySelector('button.danger').click()")
            try await browser.click("#confirm-yes")
            try await browser.waitFor(text: "Withdrew the invitation of erin.")
            try await browser.waitUntil("erin gone from the open list") {
                try await !browser.text("#invite-list").contains("erin")
            }
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()

        let phone = try await WebDriver.start(width: 390, height: 844)
        do {
            try await ConsoleBrowserTests.signIn(phone, broker, as: "olivia", device: operatorDevice)
            try await phone.click("nav button[data-view=invitations]")
            try await phone.waitFor(element: "#invite-list tbody tr")
            #expect(try await ConsoleSearchBrowserTests.readable(phone) == nil)
            try await WebApproverBrowserTests.save(phone, "console-invitations-phone")
        } catch {
            await phone.quit()
            throw error
        }
        await phone.quit()
    }
}
