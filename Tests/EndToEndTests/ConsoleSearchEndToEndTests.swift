import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// The console's user list and event search over HTTP, signed in as an
/// operator, against a real broker with events made through the REST API.
@Suite("end to end: finding users and events in the console")
struct ConsoleSearchEndToEndTests {
    typealias Attack = ConsoleAttackEndToEndTests

    /// A signed-in session's cookies.
    static func signIn(_ broker: LiveBroker) async throws -> [String: String] {
        let device = try await ConsoleBrowserTests.addOperator(broker, "alice")
        let (attempt, number) = try await Attack.startSignIn(broker, "alice")
        try await Attack.approve(broker, "alice", device: device, number: number)
        let finished = try await Attack.finish(broker, attempt: attempt)
        return ["countersign_console": try #require(finished.cookies["countersign_console"])]
    }

    static func raw(_ broker: LiveBroker, _ path: String, cookies: [String: String]) async throws -> (
        Int, String, String
    ) {
        var request = HTTPClientRequest(url: broker.url + path)
        request.headers.add(name: "X-Forwarded-For", value: "198.51.100.1")
        request.headers.add(name: "Cookie", value: cookies.map { "\($0)=\($1)" }.joined(separator: "; "))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = String(buffer: try await response.body.collect(upTo: 16 << 20))
        return (Int(response.status.code), response.headers["Content-Type"].first ?? "", body)
    }

    @Test("users by prefix and page; events by each filter, paged by cursor, exported as CSV and JSON lines")
    func search() async throws {
        let broker = try await ConsoleBrowserTests.startBroker()
        defer { broker.stop() }
        for user in ["amy", "amelia", "Amos", "bert"] { _ = try await broker.enrollDevice(user: user) }
        let backend = broker.backend
        var made: [String] = []
        for index in 0..<5 {
            let ticket = try await backend.requestApproval(
                user: index < 3 ? "amy" : "bert", details: index == 4 ? "=cmd|' /C calc'!A0" : "pay \(index)",
                ip: index == 1 ? "203.0.113.7" : "192.0.2.10")
            made.append(ticket.event.ID)
        }
        let session = try await Self.signIn(broker)

        let am = try await Attack.call(broker, .GET, "/console/api/users?prefix=am", cookies: session)
        let users = try #require(am.json["users"] as? [[String: Any]])
        #expect(users.map { $0["user"] as? String } == ["amelia", "amy"], "case counts: \(am.json)")
        #expect(users.first?["apps"] as? [String] == [broker.apiKeyID] && users.first?["active_devices"] as? Int == 1)
        let page = try await Attack.call(broker, .GET, "/console/api/users?limit=2", cookies: session)
        let next = try #require(page.json["next"] as? String)
        let rest = try await Attack.call(
            broker, .GET, "/console/api/users?limit=2&after=\(next)", cookies: session)
        #expect(
            ((page.json["users"] as? [[String: Any]] ?? []) + (rest.json["users"] as? [[String: Any]] ?? [])).count
                == 4, "two pages")

        func found(_ query: String) async throws -> [String] {
            let answer = try await Attack.call(broker, .GET, "/console/api/events?" + query, cookies: session)
            #expect(answer.status == 200, "\(query): \(answer.json)")
            return (answer.json["events"] as? [[String: Any]] ?? []).compactMap { $0["ID"] as? String }
        }
        #expect(try await found("user=amy") == Array(made[0..<3].reversed()), "newest first")
        #expect(try await found("address=203.0.113.7") == [made[1]])
        #expect(try await found("user=bert&status=pending&type=TRANSACTION&channel=api").count == 2)
        #expect(try await found("status=approved&channel=api").isEmpty)
        #expect(try await found("app=\(broker.apiKeyID)&user=nobody").isEmpty)
        #expect(try await found("from=2000-01-01T00:00:00Z&to=2000-01-02T00:00:00Z").isEmpty)
        // The console's own sign-in is an event too, of its channel.
        #expect(try await found("channel=console").count == 1)
        #expect(try await found("status=approved").count == 1)
        var paged: [String] = []
        var cursor = ""
        repeat {
            let answer = try await Attack.call(
                broker, .GET, "/console/api/events?channel=api&limit=2" + cursor, cookies: session)
            paged += (answer.json["events"] as? [[String: Any]] ?? []).compactMap { $0["ID"] as? String }
            cursor = (answer.json["next"] as? String).map { "&cursor=" + $0 } ?? ""
        } while !cursor.isEmpty && paged.count < 20
        #expect(paged == made.reversed(), "paged by cursor, none twice")

        for (query, why) in [
            ("status=lost", "status"), ("channel=fax", "channel"), ("from=yesterday", "from"),
            ("cursor=bm90LWEtY3Vyc29y", "cursor"),
        ] {
            let refused = try await Attack.call(broker, .GET, "/console/api/events?" + query, cookies: session)
            #expect(refused.status == 400, "\(why): \(refused.json)")
        }
        #expect(try await Attack.call(broker, .GET, "/console/api/events").status == 401, "signed in only")

        let (status, type, csv) = try await Self.raw(
            broker, "/console/api/events/export?format=csv&channel=api", cookies: session)
        #expect(status == 200 && type.hasPrefix("text/csv"))
        let lines = csv.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(lines.first?.hasPrefix("created_at,id,app,app_id,user,type,status") == true, "\(csv)")
        #expect(lines.count == 6, "a header and five events:\n\(csv)")
        #expect(csv.contains(",'=cmd|' /C calc'!A0"), "a formula is shown as text:\n\(csv)")
        let (_, jsonType, jsonl) = try await Self.raw(
            broker, "/console/api/events/export?format=jsonl&user=amy", cookies: session)
        let documents = jsonl.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(jsonType == "application/x-ndjson" && documents.count == 3, "\(jsonl)")
        #expect(documents.allSatisfy { $0["client_user_id"] as? String == "amy" && $0["signature"] == nil })
    }
}
