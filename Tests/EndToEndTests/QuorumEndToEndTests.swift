import CountersignClient
import CountersignCore
import Foundation
import NIOHTTP1
import Testing

/// Approvals by several people between real processes: a backend asks for
/// "2 of these 3 people", each approves with their own device agent, and
/// the backend proves the quorum with the keys it pinned, through the SDK
/// and through an independent Python script written from the spec.
@Suite("end to end: approvals by several people", .serialized)
struct QuorumEndToEndTests {
    /// `scripts/verify-decision.py --quorum` on `event`, with `keys` pinned.
    func python(
        _ event: Data, keys: Data, app: String, broker: String?, required: Int, approvers: [String],
        allowRequester: Bool = false
    ) async throws -> (Int32, String) {
        let directory = try temporaryDirectory("quorum-check")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let eventFile = directory.appendingPathComponent("event.json")
        let keysFile = directory.appendingPathComponent("keys.json")
        try event.write(to: eventFile)
        try keys.write(to: keysFile)
        let script = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", scriptsDirectory.appendingPathComponent("verify-decision.py").path, eventFile.path,
                keysFile.path, app,
            ] + (broker.map { [$0] } ?? [])
                + ["--quorum", String(required), "--approvers", approvers.joined(separator: ",")]
                + (allowRequester ? ["--allow-requester"] : []))
        return (try await script.exitCode(), script.text)
    }

    /// `user`'s agent on `machine` answering the request.
    func approve(
        _ broker: LiveBroker, _ user: String, _ machine: URL, _ ticket: EventTicket, reject: Bool = false
    ) throws -> RunningProcess {
        try broker.agent(
            ["approve", "--event", ticket.event.ID]
                + (reject ? ["--reject"] : ["--yes", "--match", ticket.matchNumber ?? ""]), configDirectory: machine,
            user: user)
    }

    @Test("2 of 3 approve with their agents; one person's second device and the requester do not count")
    func twoOfThree() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let alice = try await broker.enrollMachine(user: "alice", name: "alice-laptop")
        let alicesDesktop = try await broker.enrollMachine(user: "alice", name: "alice-desktop")
        let bob = try await broker.enrollMachine(user: "bob", name: "bob-laptop")
        _ = try await broker.enrollMachine(user: "carol", name: "carol-laptop")
        let dave = try await broker.enrollMachine(user: "dave", name: "dave-laptop")
        // The backend pins every device's key as it enrolls.
        var devices: [DeviceDocument] = []
        for user in ["alice", "bob", "carol", "dave"] { devices += try await broker.backend.devices(user: user) }
        let pinned = Dictionary(grouping: devices, by: \.clientUserID).mapValues { $0.map(\.publicKey) }

        let ticket = try await broker.backend.requestApproval(
            user: "dave", details: "Deploy release 4.2 to production",
            approvers: .users(["alice", "bob", "carol"], required: 2))
        let first = try approve(broker, "alice", alice, ticket)
        #expect(try await first.exitCode() == 0, "\(first.text)")
        #expect(first.text.contains("approvers: 2 of alice, bob, carol must approve"), "\(first.text)")
        #expect(first.text.contains("Approved: 1 of 2 approvals: alice at"), "\(first.text)")
        #expect(first.text.contains("waiting for the others"))

        let again = try approve(broker, "alice", alicesDesktop, ticket)
        #expect(try await again.exitCode() == 6, "\(again.text)")
        #expect(again.text.contains("was approved by alice already"), "\(again.text)")
        let own = try approve(broker, "dave", dave, ticket)
        #expect(try await own.exitCode() == 6, "the requester is not asked: \(own.text)")
        #expect(try await broker.backend.event(id: ticket.event.ID).status == .pending)

        let second = try approve(broker, "bob", bob, ticket)
        #expect(try await second.exitCode() == 0, "\(second.text)")
        #expect(second.text.contains("1 of 2 approvals: alice at"), "bob sees alice's approval: \(second.text)")
        #expect(second.text.contains("Approved: 2 of 2 approvals"), "\(second.text)")
        #expect(second.text.contains("the request is approved"))

        let approved = try await broker.backend.event(id: ticket.event.ID)
        #expect(approved.status == .approved && approved.approvals?.map(\.clientUserID) == ["alice", "bob"])
        let counted = try await broker.backend.verifyQuorum(
            of: approved, app: "demo", pinnedKeys: pinned, approvers: ["alice", "bob", "carol"],
            requiredApprovals: 2)
        #expect(counted.map(\.clientUserID) == ["alice", "bob"])
        await #expect(throws: ProtocolError(.tooFewApprovals, "")) {
            try await broker.backend.verifyQuorum(
                of: approved, app: "demo", pinnedKeys: pinned, approvers: ["alice", "bob", "carol"],
                requiredApprovals: 3)
        }

        let document = try WireCoding.encoder().encode(approved)
        let keys = try WireCoding.encoder().encode(["devices": devices])
        let (status, text) = try await python(
            document, keys: keys, app: "demo", broker: broker.url, required: 2, approvers: ["alice", "bob", "carol"])
        #expect(status == 0, "\(text)")
        #expect(text.contains(#""client_user_id": "alice""#) && text.contains(#""client_user_id": "bob""#))
        let (tooMany, refusal) = try await python(
            document, keys: keys, app: "demo", broker: broker.url, required: 3, approvers: ["alice", "bob", "carol"])
        #expect(tooMany == 1 && refusal.contains("2 distinct approver(s)"), "\(refusal)")
        let (single, why) = try await python(
            document, keys: keys, app: "demo", broker: nil, required: 2, approvers: ["alice", "bob"])
        #expect(single == 0, "\(why)")

        // The webhooks and the trail: the approval added, then the approval.
        let records = try await broker.backend.events(user: "dave")
        #expect(records.first?.approvals?.count == 2)
    }

    @Test("under the app's LOGIN policy, a machine's login for alice waits for 2 of the ops group's agents")
    func loginPolicy() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        _ = try await broker.enrollMachine(user: "alice", name: "alice-laptop")
        let bob = try await broker.enrollMachine(user: "bob", name: "bob-laptop")
        let carol = try await broker.enrollMachine(user: "carol", name: "carol-laptop")
        let paths: [(String, [String: Any])] = [
            ("/api/v1/approver-groups/ops", ["users": ["alice", "bob", "carol"]]),
            ("/api/v1/quorum-policies/LOGIN", ["group": "ops", "required_approvals": 2]),
        ]
        for (path, body) in paths {
            let answer = try await LiveHTTP.request(
                .PUT, broker.url + path,
                headers: ["Authorization": broker.basicAuthorization],
                body: body)
            #expect(answer.status == 201, "\(path): \(answer)")
        }

        // A machine that is not trusted asks to log in as alice, as the PAM module's helper does.
        let machine = try temporaryDirectory("machine-B").appendingPathComponent("countersign")
        let (login, eventID, number) = try await broker.startLogin(machine: machine)
        defer { login.stop() }
        let ticket = try await broker.backend.event(id: eventID)
        #expect(ticket.approvers?.users == ["alice", "bob", "carol"] && ticket.approvers?.group == "ops")
        for (user, device) in [("bob", bob), ("carol", carol)] {
            let approve = try broker.agent(
                ["approve", "--event", eventID, "--yes", "--match", number], configDirectory: device, user: user)
            #expect(try await approve.exitCode() == 0, "\(user): \(approve.text)")
        }
        #expect(try await login.exitCode() == 0, "the login wakes approved: \(login.text)")
        let event = try await broker.backend.event(id: eventID)
        #expect(event.status == .approved && event.approvals?.map(\.clientUserID) == ["bob", "carol"])
    }

    @Test("any approver's rejection rejects; with 1 of 2 approvals the request expires unapproved")
    func rejectionAndExpiry() async throws {
        let broker = try await LiveBroker.start(arguments: ["--approval-window", "30s"])
        defer { broker.stop() }
        let alice = try await broker.enrollMachine(user: "alice", name: "alice-laptop")
        let bob = try await broker.enrollMachine(user: "bob", name: "bob-laptop")
        _ = try await broker.enrollMachine(user: "carol", name: "carol-laptop")
        let quorum = CountersignBackend.Approvers.users(["alice", "bob", "carol"], required: 2)

        let rejected = try await broker.backend.requestApproval(user: "dave", details: "Drop table", approvers: quorum)
        #expect(try await approve(broker, "alice", alice, rejected).exitCode() == 0)
        let no = try approve(broker, "bob", bob, rejected, reject: true)
        #expect(try await no.exitCode() == 0, "\(no.text)")
        #expect(no.text.contains("Rejected."), "\(no.text)")
        let event = try await broker.backend.event(id: rejected.event.ID)
        #expect(event.status == .rejected && event.approvals?.count == 1)
        await #expect(throws: ProtocolError(.wrongVerdict, "")) {
            try await broker.backend.verifyQuorum(
                of: event, app: "demo", pinnedKeys: [:], approvers: ["alice", "bob", "carol"], requiredApprovals: 2)
        }

        let expiring = try await broker.backend.requestApproval(user: "dave", details: "Rotate keys", approvers: quorum)
        #expect(try await approve(broker, "alice", alice, expiring).exitCode() == 0)
        var expired = try await broker.backend.event(id: expiring.event.ID, wait: 30)
        while expired.status == .pending {
            expired = try await broker.backend.event(id: expiring.event.ID, wait: 30)
        }
        #expect(expired.status == .expired && expired.signature == nil && expired.approvals?.count == 1)
    }

    @Test("in the web approver: who asks, the approvals as they come, and the card ends when the quorum is reached")
    func webApprover() async throws {
        let broker = try await LiveBroker.startForBrowser()
        defer { broker.stop() }
        let alice = try await broker.enrollMachine(user: "alice", name: "alice-laptop")
        let bob = try await broker.enrollMachine(user: "bob", name: "bob-laptop")
        let token = try await broker.backend.createEnrollmentToken(user: "carol").token
        let browser = try await WebDriver.start()
        do {
            try await browser.open("\(broker.url)/approve/#enroll=\(token)&user=carol&api_key=\(broker.apiKeyID)")
            try await browser.waitFor(element: "#setup:not([hidden]) #setup-button")
            try await browser.click("#setup-button")
            try await browser.waitFor(text: "trusted device of carol")
            let quorum = CountersignBackend.Approvers.users(["alice", "bob", "carol"], required: 2)
            let card = WebApproverBrowserTests.card

            // Carol's approval completes it after alice's, which her card showed as it came.
            let first = try await broker.backend.requestApproval(
                user: "dave", details: "Deploy release 4.2 to production", approvers: quorum)
            try await browser.waitFor(element: "\(card(first.event.ID)) .progress")
            let shown = try await browser.text(card(first.event.ID))
            #expect(shown.contains("Asked by\ndave") && shown.contains("Approvers\n2 of alice, bob, carol"), "\(shown)")
            #expect(shown.contains("Approvals\n0 of 2"), "\(shown)")
            #expect(try await approve(broker, "alice", alice, first).exitCode() == 0)
            try await browser.waitUntil("alice's approval on carol's card") {
                (try? await browser.text("\(card(first.event.ID)) .progress"))?.hasPrefix("1 of 2: alice at") == true
            }
            try await WebApproverBrowserTests.save(browser, "quorum-progress")
            try await WebApproverBrowserTests.answer(
                browser, first.event.ID, number: first.matchNumber, button: "approve")
            try await WebApproverBrowserTests.waitForOutcome(browser, first.event.ID, "Approved")
            #expect(try await broker.backend.event(id: first.event.ID).status == .approved)

            // Carol first: her card waits for the others, and ends when bob's approval completes it.
            let second = try await broker.backend.requestApproval(
                user: "dave", details: "Drop the staging database", approvers: quorum)
            try await WebApproverBrowserTests.answer(
                browser, second.event.ID, number: second.matchNumber, button: "approve")
            try await WebApproverBrowserTests.waitForOutcome(
                browser, second.event.ID, "Waiting for the other approvers")
            #expect(
                try await browser.execute(
                    "return document.querySelector(\"\(card(second.event.ID)) form\").hidden") as? Bool == true,
                "nothing left to answer")
            #expect(try await approve(broker, "bob", bob, second).exitCode() == 0)
            try await WebApproverBrowserTests.waitForOutcome(browser, second.event.ID, "Approved by 2 of 2: carol, bob")
            try await WebApproverBrowserTests.save(browser, "quorum-approved")
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }

    @Test("the console sets an app's approver group, audited; the requester's page shows who approved")
    func console() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let operatorDevice = try await ConsoleBrowserTests.addOperator(broker, "olga")
        let alice = try await broker.enrollMachine(user: "alice", name: "alice-laptop")
        let bob = try await broker.enrollMachine(user: "bob", name: "bob-laptop")
        _ = try await broker.enrollDevice(user: "dave", name: "dave-laptop")
        let browser = try await WebDriver.start(width: 1280, height: 900)
        do {
            try await ConsoleBrowserTests.signIn(browser, broker, as: "olga", device: operatorDevice)
            try await browser.click("nav button[data-view=apps]")
            try await browser.waitFor(element: "#approver-group-name")
            try await browser.type("payments", into: "#approver-group-name")
            try await browser.type("alice, bob\ncarol", into: "#approver-group-users")
            try await browser.click("#approver-group-form button[type=submit]")
            try await browser.waitFor(element: "#confirm[open]")
            #expect(try await browser.text("#confirm-text").contains("3 user(s): alice, bob, carol"))
            try await browser.click("#confirm-yes")
            try await browser.waitUntil("the group listed") {
                (try? await browser.text("#approver-groups-result"))?.contains("alice, bob, carol") == true
            }
            #expect(try await browser.text("#approver-groups-result").contains("console:olga"))
            #expect(try await ConsoleSearchBrowserTests.readable(browser) == nil)
            try await WebApproverBrowserTests.save(browser, "console-approver-groups")

            // The app's backend names it; two of its people approve.
            let ticket = try await broker.backend.requestApproval(
                user: "dave", details: "Pay 25,000 EUR to ACME", approvers: .group("payments", required: 2))
            #expect(ticket.event.approvers?.users == ["alice", "bob", "carol"])
            #expect(try await approve(broker, "alice", alice, ticket).exitCode() == 0)
            #expect(try await approve(broker, "bob", bob, ticket).exitCode() == 0)

            try await browser.click("nav button[data-view=users]")
            _ = try await browser.execute(
                "const field = document.querySelector('#user-prefix'); field.value = 'dave';"
                    + "field.dispatchEvent(new Event('input'))")
            try await browser.waitUntil("dave listed") {
                (try? await browser.text("#user-list"))?.contains("dave") == true
            }
            _ = try await browser.execute(
                "[...document.querySelectorAll('#user-list a')].find((link) => link.textContent === 'dave').click()")
            try await browser.waitUntil("the approvers on dave's page") {
                (try? await browser.text("#user-result"))?.contains("alice, bob") == true
            }
            #expect(try await browser.text("#user-result").contains("2 of 2 approvers"))

            try await browser.click("nav button[data-view=apps]")
            try await ConsoleManageBrowserTests.act(
                browser, in: "#approver-groups-result", row: "payments", button: "Delete")
            try await browser.waitFor(text: "Deleted the group")
            let actions = try await ConsoleBrowserTests.auditActions(broker)
            #expect(actions.contains("approver_group.set") && actions.contains("approver_group.deleted"), "\(actions)")
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }

    @Test("the Python check agrees with every case of proto/vectors/quorums.json")
    func vectors() async throws {
        let url = scriptsDirectory.deletingLastPathComponent().appendingPathComponent("proto/vectors/quorums.json")
        let vectors = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] ?? [:]
        let keys = try JSONSerialization.data(withJSONObject: vectors["pinnedKeys"] ?? [:])
        let tests = vectors["tests"] as? [[String: Any]] ?? []
        #expect(tests.count >= 10)
        for test in tests {
            let comment = test["comment"] as? String ?? ""
            let (status, text) = try await python(
                try JSONSerialization.data(withJSONObject: test["event"] ?? [:]), keys: keys,
                app: vectors["app"] as? String ?? "", broker: vectors["broker"] as? String,
                required: test["requiredApprovals"] as? Int ?? 0, approvers: test["approvers"] as? [String] ?? [],
                allowRequester: test["allowRequester"] as? Bool ?? false)
            #expect((status == 0) == (test["result"] as? String == "valid"), "\(comment): \(text)")
        }
    }
}
