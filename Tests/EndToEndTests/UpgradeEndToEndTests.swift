import AsyncHTTPClient
import CountersignClient
import CountersignCore
import CountersignPostgresTesting
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Testing

/// A store the previous release left behind, under this one: the fixture in
/// Tests/Fixtures/upgrade-0.9.0 was made by 0.9.0's own binaries with
/// scripts/make-upgrade-fixture.py (real agents enrolling and deciding), and
/// holds what that broker answered about it.
@Suite("end to end: upgrading a 0.9.0 store", .serialized)
struct UpgradeEndToEndTests {
    @Test("a SQLite file 0.9.0 wrote migrates, and keeps every device, event and decision")
    func sqlite() async throws {
        let fixture = try UpgradeFixture("sqlite")
        let data = try temporaryDirectory("upgrade-data")
        try FileManager.default.copyItem(
            at: fixture.directory.appendingPathComponent("countersign.sqlite"),
            to: data.appendingPathComponent("countersign.sqlite"))
        try await fixture.check(database: nil, dataDirectory: data)
    }

    @Test("a PostgreSQL dump 0.9.0 wrote restores, migrates, and keeps every device, event and decision")
    func postgres() async throws {
        let fixture = try UpgradeFixture("postgres")
        let database = try await TestPostgres.createDatabase()
        let result = await Result {
            let restore = try RunningProcess(
                "/usr/bin/psql",
                [
                    "-v", "ON_ERROR_STOP=1", "-q", "-f", fixture.directory.appendingPathComponent("dump.sql").path,
                    database,
                ])
            guard try await restore.exitCode(timeout: .seconds(120)) == 0 else {
                throw ProcessFailure("psql could not restore the dump:\n\(restore.text)")
            }
            try await fixture.check(database: database, dataDirectory: try temporaryDirectory("upgrade-data"))
        }
        try await TestPostgres.dropDatabase(database)
        try result.get()
    }
}

/// One store of the fixture, copied to a temporary directory (the agents'
/// key files and the TOTP key get back the 0600 that git does not keep).
struct UpgradeFixture {
    let directory: URL
    /// What 0.9.0 answered: devices, events, decisions, JWKS, by name.
    let expected: [String: Any]

    init(_ store: String) throws {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/upgrade-0.9.0/\(store)")
        directory = try temporaryDirectory("upgrade-\(store)").appendingPathComponent("fixture")
        try FileManager.default.copyItem(at: source, to: directory)
        let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)!
        for case let file as URL in files {
            let isDirectory = (try? file.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) == true
            try FileManager.default.setAttributes(
                [.posixPermissions: isDirectory ? 0o700 : 0o600], ofItemAtPath: file.path)
        }
        let text = try Data(contentsOf: directory.appendingPathComponent("expected.json"))
        expected = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any])
    }

    /// A compact JWS's claims.
    func claims(_ token: String) throws -> [String: Any] {
        let payload = try #require(Base64URL.decode(String(token.split(separator: ".")[1])))
        return try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
    }

    /// The top-level keys whose values differ, compared as JSON text.
    func differences(_ a: [String: Any], _ b: [String: Any]) -> Set<String> {
        func text(_ value: Any?) -> String? {
            value.flatMap { try? JSONSerialization.data(withJSONObject: [$0], options: .sortedKeys) }.map {
                String(decoding: $0, as: UTF8.self)
            }
        }
        return Set(a.keys).union(b.keys).filter { text(a[$0]) == nil || text(a[$0]) != text(b[$0]) }
    }

    func string(_ key: String) throws -> String { try #require(expected[key] as? String) }
    func object(_ key: String) throws -> [String: Any] { try #require(expected[key] as? [String: Any]) }

    /// `device-broker migrate`, then a broker on the store that answers as
    /// 0.9.0 did, signs with the same keys, and takes the same devices' and
    /// TOTP codes.
    func check(database: String?, dataDirectory: URL) async throws {
        #expect(try string("version") == "0.9.0")
        let store = database.map { ["--database", $0] } ?? ["--data-dir", dataDirectory.path]
        let migrate = try RunningProcess("device-broker", ["migrate"] + store)
        #expect(try await migrate.exitCode(timeout: .seconds(120)) == 0, "\(migrate.text)")
        // The fixture's events ended on the day it was made: kept for a century
        // here, where 30 days would collect them before they are looked at.
        let broker = try await LiveBroker.start(
            onStore: database, dataDirectory: dataDirectory,
            totpKeyFile: directory.appendingPathComponent("totp.key").path, apiKeyID: try string("api_key_id"),
            apiSecret: try string("api_secret_key"), arguments: ["--retention", "36500d"])
        defer { broker.stop() }

        // The broker's signing keys: tokens 0.9.0 issued still verify.
        let keys = try #require(try object("jwks")["keys"] as? [NSDictionary])
        let jwks = try #require(try await get(broker, "/.well-known/jwks.json")["keys"] as? [NSDictionary])
        for key in keys { #expect(jwks.contains(key), "0.9.0's signing key \(key["kid"] ?? "") is kept") }

        for (user, list) in try object("devices") {
            let now = try await get(broker, "/api/v1/users/\(user)/devices")
            #expect(differences(now, try #require(list as? [String: Any])) == [], "\(user)'s devices")
        }
        for (user, list) in try object("decisions") {
            let now = try await get(broker, "/api/v1/users/\(user)/decisions")
            #expect(differences(now, try #require(list as? [String: Any])) == [], "\(user)'s decisions")
        }
        for (name, value) in try object("events") {
            let then = try #require(value as? [String: Any])
            let now = try await get(broker, "/api/v1/events/\(try #require(then["ID"] as? String))")
            var changed = differences(now, then)
            // Added since 0.9.0: how an approved event was authenticated,
            // here always by a device's key (no passkeys then).
            if now["status"] as? String == "approved" {
                #expect(now["acr"] as? String == ApprovalAuthentication.deviceACR && now["amr"] as? [String] == ["swk"])
            }
            changed.subtract(["acr", "amr"])
            // Added since 0.9.0 too: the door it came through, the REST API
            // for every event 0.9.0 made (it had no other).
            #expect(now["channel"] as? String == "api", "event \(name)")
            changed.remove("channel")
            if name == "left_pending" {
                // Pending when 0.9.0 stopped, and past its window since.
                #expect(then["status"] as? String == "pending" && now["status"] as? String == "expired")
                changed.subtract(["status", "new"])
            }
            // A settled event's token is signed afresh at each read (ECDSA
            // signatures differ each time): the same claims, the same keys.
            if let token = now["signature"] as? String {
                let renewed = try claims(token)
                let first = try claims(try #require(then["signature"] as? String))
                // Its issuer is the broker's URL, which moved with the test.
                #expect(
                    differences(renewed, first).subtracting(["acr", "amr"]) == ["iss"],
                    "\(name)'s token: \(renewed) was \(first)")
                #expect(renewed["acr"] as? String == now["acr"] as? String)
                changed.remove("signature")
            }
            #expect(
                changed == [], "event \(name): \(changed.map { "\($0): \(now[$0] ?? "-") was \(then[$0] ?? "-")" })")
        }

        // The devices' signatures on their decisions still check, against
        // the keys the device list gives and the broker they were made at.
        let made = CountersignBackend(
            broker: try string("broker"), apiKeyID: broker.apiKeyID, apiSecretKey: broker.apiSecret)
        let pinned =
            try await broker.backend.devices(user: "alice").map(\.publicKey)
            + broker.backend.devices(user: "bob").map(\.publicKey)
        for name in ["approved_login", "rejected_transaction", "approved_bob"] {
            let id = try #require(try object("events")[name] as? [String: Any])["ID"] as! String
            let event = try await broker.backend.event(id: id)
            _ = try await made.verifyDecision(of: event, app: "fixture", pinnedKeys: pinned)
        }

        // A device enrolled under 0.9.0 approves under this one, and its TOTP
        // secret, sealed under the same key, gives codes the broker takes.
        let laptop = try await moved("alice-laptop", to: broker)
        let ticket = try await broker.backend.requestApproval(user: "alice", details: "after the upgrade")
        let approve = try broker.agent(
            ["approve", "--event", ticket.event.ID, "--yes", "--match", try #require(ticket.matchNumber)],
            configDirectory: laptop)
        #expect(try await approve.exitCode(timeout: .seconds(120)) == 0, "\(approve.text)")
        let approved = try await broker.backend.event(id: ticket.event.ID)
        #expect(approved.status == .approved)
        let desktop = try await moved("alice-desktop", to: broker)
        let code = try broker.agent(["code"], configDirectory: desktop)
        #expect(try await code.exitCode(timeout: .seconds(120)) == 0, "\(code.text)")
        let digits = try #require(code.text.firstMatch(of: /\b(\d{6})\b/)?.1)
        let verified = try await post(broker, "/api/v1/users/alice/totp/verify", ["code": String(digits)])
        #expect(verified.status == .ok, "\(verified.body)")
    }

    /// A copy of an agent's config directory, for the broker at its new
    /// address (the agent keeps one key file per broker, app and user).
    func moved(_ agent: String, to broker: LiveBroker) async throws -> URL {
        let copy = try temporaryDirectory("upgrade-agent").appendingPathComponent(agent)
        try FileManager.default.copyItem(at: directory.appendingPathComponent("agents/\(agent)"), to: copy)
        let store = CredentialStore(directory: copy)
        var credential = try store.unlock(try #require(try store.accounts().first), pin: nil)
        credential.broker = broker.url
        try store.save(credential)
        return copy
    }

    func get(_ broker: LiveBroker, _ path: String) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: broker.url + path)
        request.headers.add(name: "Authorization", value: broker.basicAuthorization)
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 20)
        #expect(response.status == .ok, "GET \(path): \(String(buffer: body))")
        return try #require(try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any])
    }

    func post(_ broker: LiveBroker, _ path: String, _ body: [String: String]) async throws -> (
        status: HTTPResponseStatus, body: String
    ) {
        var request = HTTPClientRequest(url: broker.url + path)
        request.method = .POST
        request.headers.add(name: "Authorization", value: broker.basicAuthorization)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: body)))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        return (response.status, String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }
}
