import CountersignClient
import CountersignCore
import CountersignPostgresTesting
import Foundation
import NIOHTTP1
import Testing

/// The directory sync against a real slapd (Tests/Fixtures/ldap), with
/// real broker processes, the real `device-broker directory` command, and
/// the app's webhooks checked by standardwebhooks.
@Suite("end to end: the directory")
struct DirectoryEndToEndTests {
    /// `device-broker directory sync --json` on the broker's store: its
    /// outcome, or the failure's text.
    static func sync(_ broker: LiveBroker, _ settings: String, _ extra: [String] = []) async throws -> Result<
        [String: Any], ProcessFailure
    > {
        let command = try RunningProcess(
            "device-broker", ["directory", "sync", "--directory", settings, "--json"] + extra + broker.storeArguments)
        guard try await command.exitCode(timeout: .seconds(120)) == 0 else {
            return .failure(ProcessFailure(command.text))
        }
        return .success(try #require(try JSONSerialization.jsonObject(with: command.json) as? [String: Any]))
    }

    /// The people `device-broker directory list` shows, by id: their state.
    static func people(_ broker: LiveBroker) async throws -> [String: String] {
        let list = try RunningProcess("device-broker", ["directory", "list", "--json"] + broker.storeArguments)
        guard try await list.exitCode(timeout: .seconds(120)) == 0 else { throw ProcessFailure(list.text) }
        var people: [String: String] = [:]
        for line in list.text.split(separator: "\n") where line.hasPrefix("{") {
            let person = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            people[try #require(person["client_user_id"] as? String)] = person["state"] as? String
        }
        return people
    }

    static func refusal(_ body: () async throws -> some Any) async -> String? {
        do {
            _ = try await body()
            return nil
        } catch let error as CountersignError {
            return error.code
        } catch {
            return "\(error)"
        }
    }

    @Test(
        "a read suspends the devices of people disabled or gone: decisions and new devices refused, inbox empty, the app told; enabled again, they act again"
    )
    func suspendAndReinstate() async throws {
        let slapd = try await SlapdProcess.start()
        let (broker, receiver, _) = try await WebhookEndToEndTests.setUp(
            types: ["device.suspended", "device.reinstated"], device: false)
        defer {
            broker.stop()
            receiver.stop()
            slapd.stop()
        }
        let carol = try await broker.enrollDevice(user: "carol", name: "carol-phone")
        let carolsLaptop = try await broker.enrollMachine(user: "carol", name: "carol-laptop")
        let dave = try await broker.enrollDevice(user: "dave", name: "dave-laptop")
        let alice = try await broker.enrollDevice(user: "alice")
        // Not in the directory: an app's own user, left alone.
        let zed = try await broker.enrollDevice(user: "zed")
        _ = try await broker.backend.requestApproval(user: "carol", details: "Pay 10 EUR")
        let waiting = try await CountersignClient(for: carol).inbox(carol, wait: 0)
        #expect(waiting.count == 1)

        // Two entries a page: the paged results control, over LDAPS.
        let settings = try slapd.settings(["page-size": "2"])
        let first = try await Self.sync(broker, settings).get()
        #expect(first["listed"] as? Int == 4 && first["suspended"] as? [String] == ["carol"], "\(first)")
        #expect(first["devices_suspended"] as? Int == 2, "\(first)")
        #expect(
            try await Self.people(broker) == [
                "alice": "active", "bob": "active", "carol": "disabled", "dave": "active",
            ])

        #expect(try await CountersignClient(for: carol).inbox(carol, wait: 0).isEmpty, "no requests to answer")
        #expect(
            await Self.refusal {
                try await CountersignClient(for: carol).decide(
                    waiting[0], verdict: .approve, match: nil, credential: carol)
            } == "device_suspended")
        #expect(
            await Self.refusal { try await broker.backend.requestApproval(user: "carol", details: "Pay 20 EUR") }
                == "no_trusted_device")
        #expect(
            await Self.refusal { try await broker.backend.createEnrollmentToken(user: "carol") } == "user_suspended")
        // The agent says so at once, rather than wait for requests it is not shown.
        let approve = try broker.agent(["approve", "--timeout", "60"], configDirectory: carolsLaptop, user: "carol")
        #expect(try await approve.exitCode(timeout: .seconds(30)) == 7, "\(approve.text)")
        #expect(approve.text.contains("This device is suspended since"), "\(approve.text)")
        let status = try broker.agent(["status"], configDirectory: carolsLaptop, user: "carol")
        #expect(try await status.exitCode() == 7 && status.text.contains("approves nothing"), "\(status.text)")
        // The device itself may look at itself, and do nothing else.
        let client = CountersignClient(for: carol)
        #expect(try await client.whoAmI(carol).suspendedAt != nil)
        #expect(await Self.refusal { try await client.loginAsTrustedDevice(carol) } == "device_suspended")
        #expect(await Self.refusal { try await client.createRecoveryCodes(carol) } == "device_suspended")
        #expect(await Self.refusal { try await client.createTOTPSecret(carol) } == "device_suspended")
        let carolDevice = try #require(try await broker.backend.devices(user: "carol").first)
        #expect(carolDevice.suspendedAt != nil && carolDevice.revokedAt == nil, "suspended, not removed")
        for (user, device) in [("alice", alice), ("zed", zed)] {
            _ = try await broker.backend.requestApproval(user: user, details: "Pay 5 EUR", numberMatching: false)
            let item = try #require(try await CountersignClient(for: device).inbox(device, wait: 5).first)
            let decided = try await CountersignClient(for: device).decide(
                item, verdict: .approve, match: nil, credential: device)
            #expect(decided.status == .approved, "\(user) still approves")
        }

        // carol is enabled again; dave leaves the company.
        try await slapd.modify(
            """
            dn: uid=carol,ou=people,dc=example,dc=org
            changetype: modify
            delete: pwdAccountLockedTime

            dn: uid=dave,ou=people,dc=example,dc=org
            changetype: delete
            """)
        let second = try await Self.sync(broker, settings).get()
        #expect(second["suspended"] as? [String] == ["dave"] && second["reinstated"] as? [String] == ["carol"])
        #expect(try await Self.people(broker)["dave"] == "gone", "kept, not deleted")
        _ = try await broker.backend.requestApproval(user: "carol", details: "Pay 30 EUR", numberMatching: false)
        let again = try #require(
            try await CountersignClient(for: carol).inbox(carol, wait: 5).first { $0.event.details == "Pay 30 EUR" })
        let approved = try await CountersignClient(for: carol).decide(
            again, verdict: .approve, match: nil, credential: carol)
        #expect(approved.status == .approved, "carol's device acts again")
        #expect(try await CountersignClient(for: dave).inbox(dave, wait: 0).isEmpty)
        let changes = try await broker.backend.deviceChanges(user: "carol").map(\.action)
        #expect(changes.contains(.suspended) && changes.contains(.reinstated), "\(changes)")

        // One notice a device: carol's two, dave's one.
        let received = try await receiver.waitUntil("five notices") { $0.count >= 5 }
        let notices = received.compactMap { $0.body.map { "\($0.type) \($0.data.client_user_id ?? "?")" } }.sorted()
        #expect(
            notices == [
                "device.reinstated carol", "device.reinstated carol", "device.suspended carol",
                "device.suspended carol",
                "device.suspended dave",
            ], "\(notices)")
        #expect(received.allSatisfy { $0.verified })

        let audit = try RunningProcess("device-broker", ["audit", "export"] + broker.storeArguments)
        #expect(try await audit.exitCode() == 0)
        let lines = audit.text.split(separator: "\n").filter { $0.contains("directory.user_") }
        #expect(lines.count == 3 && lines.allSatisfy { $0.contains(#""actor":"directory""#) }, "\(lines)")
    }

    @Test(
        "serve --directory reads at start; a read that fails or lists nobody changes nothing; max-suspensions stops a mass suspension"
    )
    func safeguards() async throws {
        let slapd = try await SlapdProcess.start()
        defer { slapd.stop() }
        // StartTLS on ldap://, as well as LDAPS.
        let settings = try slapd.settings([
            "uri": try slapd.ldapURI, "start-tls": "true", "max-suspensions": "1",
        ])
        let broker = try await LiveBroker.start(arguments: ["--directory", settings])
        defer { broker.stop() }
        let deadline = ContinuousClock.now + .seconds(60)
        while try await Self.people(broker).count < 4, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(try await Self.people(broker)["carol"] == "disabled", "read when serve started")
        let metrics = try await broker.metricsText()
        #expect(
            metrics.contains(/countersign_directory_last_read_timestamp_seconds 1[0-9]{9}/), "\(metrics.prefix(2000))")
        // A file the settings name that cannot be read stops serve at start.
        let missing = try RunningProcess(
            "device-broker",
            [
                "serve", "--port", "1", "--directory",
                try slapd.settings(["bind-password-file": "/nonexistent/password"]),
            ]
                + broker.storeArguments)
        #expect(try await missing.exitCode() == 64, "\(missing.text)")
        #expect(missing.text.contains("cannot read bind-password-file /nonexistent/password"), "\(missing.text)")
        let alice = try await broker.enrollDevice(user: "alice")
        _ = try await broker.enrollDevice(user: "bob")

        let nobody = try await Self.sync(broker, try slapd.settings(["filter": "(uid=nobody)"]))
        #expect(nobody.failureText?.contains("listed nobody") == true, "\(nobody)")
        let wrongCA = slapd.directory.appendingPathComponent("tls/wrong-ca.pem").path
        let untrusted = try await Self.sync(broker, try slapd.settings(["ca-file": wrongCA]))
        #expect(untrusted.failureText?.contains("TLS handshake failed") == true, "\(untrusted)")
        #expect(untrusted.failureText?.contains("unknown error code") == false, "\(untrusted)")
        let badPassword = slapd.directory.appendingPathComponent("wrong-password")
        try "not-the-password".write(to: badPassword, atomically: true, encoding: .utf8)
        let refusedBind = try await Self.sync(broker, try slapd.settings(["bind-password-file": badPassword.path]))
        #expect(refusedBind.failureText?.contains("Invalid credentials") == true, "\(refusedBind)")

        try await slapd.modify(
            """
            dn: uid=alice,ou=people,dc=example,dc=org
            changetype: modify
            replace: pwdAccountLockedTime
            pwdAccountLockedTime: 000001010000Z

            dn: uid=bob,ou=people,dc=example,dc=org
            changetype: modify
            replace: pwdAccountLockedTime
            pwdAccountLockedTime: 000001010000Z
            """)
        let tooMany = try await Self.sync(broker, settings)
        #expect(tooMany.failureText?.contains("would suspend 2 people") == true, "\(tooMany)")
        #expect(try await Self.people(broker)["alice"] == "active", "nothing changed")
        #expect(try await broker.backend.devices(user: "alice").first?.suspendedAt == nil)
        let forced = try await Self.sync(broker, settings, ["--force"]).get()
        #expect(forced["suspended"] as? [String] == ["alice", "bob"], "\(forced)")
        #expect(forced["devices_suspended"] as? Int == 2, "\(forced)")
        #expect(try await broker.backend.devices(user: "alice").first?.suspendedAt != nil)
        #expect(try await CountersignClient(for: alice).inbox(alice, wait: 0).isEmpty)
    }
}

/// The directory with two instances on one PostgreSQL database.
@Suite("end to end: the directory on PostgreSQL")
struct DirectoryPostgresTests {
    @Test("a read through one instance suspends at once on the other: its inbox empty, its decision refused")
    func twoInstances() async throws {
        let slapd = try await SlapdProcess.start()
        let database = try await TestPostgres.createDatabase()
        let a = try await LiveBroker.start(database: database)
        let b = try await a.startInstance()
        let carol = try await a.enrollDevice(user: "carol", name: "carol-phone")
        // The same device, talking to the other instance.
        let atB = DeviceCredential(
            broker: b.url, apiKeyID: a.apiKeyID, clientUserID: "carol", privateKey: carol.privateKey,
            name: "carol-phone")
        _ = try await a.backend.requestApproval(user: "carol", details: "Pay 10 EUR", numberMatching: false)
        let waiting = try #require(try await CountersignClient(for: atB).inbox(atB, wait: 5).first)

        let read = try await DirectoryEndToEndTests.sync(a, try slapd.settings()).get()
        #expect(read["suspended"] as? [String] == ["carol"], "\(read)")
        #expect(try await CountersignClient(for: atB).inbox(atB, wait: 0).isEmpty)
        #expect(
            await DirectoryEndToEndTests.refusal {
                try await CountersignClient(for: atB).decide(waiting, verdict: .approve, match: nil, credential: atB)
            } == "device_suspended")
        #expect(try await DirectoryEndToEndTests.people(b)["carol"] == "disabled")
        a.stop()
        b.stop()
        slapd.stop()
        try await TestPostgres.dropDatabase(database)
    }
}

/// An operator is a person of the directory too.
@Suite("end to end: the directory and the console's operators")
struct DirectoryOperatorTests {
    @Test("an operator the directory disables is signed out of the console at their next request")
    func operatorDisabled() async throws {
        let slapd = try await SlapdProcess.start()
        let broker = try await ConsoleBrowserTests.startBroker()
        defer {
            broker.stop()
            slapd.stop()
        }
        let session = try await ConsoleSearchEndToEndTests.signIn(broker)
        let settings = try slapd.settings()
        _ = try await DirectoryEndToEndTests.sync(broker, settings).get()
        let before = try await ConsoleAttackEndToEndTests.call(broker, .GET, "/console/api/session", cookies: session)
        #expect(before.status == 200, "alice is enabled: \(before.json)")
        try await slapd.modify(
            """
            dn: uid=alice,ou=people,dc=example,dc=org
            changetype: modify
            replace: pwdAccountLockedTime
            pwdAccountLockedTime: 000001010000Z
            """)
        let read = try await DirectoryEndToEndTests.sync(broker, settings).get()
        #expect(read["suspended"] as? [String] == ["alice"], "\(read)")
        let after = try await ConsoleAttackEndToEndTests.call(broker, .GET, "/console/api/session", cookies: session)
        #expect(after.status == 401, "signed out: \(after.json)")
    }
}

extension Result where Failure == ProcessFailure {
    /// The failure's text, or nil after a success.
    var failureText: String? {
        if case .failure(let failure) = self { return failure.description }
        return nil
    }
}
