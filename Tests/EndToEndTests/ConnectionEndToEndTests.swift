import Foundation
import Testing

/// Requests over one raw keep-alive connection, as a client library would
/// send them: each answered in turn whatever its body, until the client
/// asks to close.
@Suite("end to end: many requests on one connection")
struct ConnectionEndToEndTests {
    /// The status of each response, in order (a body runs straight into
    /// the next status line).
    static func statuses(_ text: String) -> [String] {
        text.matches(of: #/HTTP/1\.1 ([0-9]{3}) /#).map { String($0.output.1) }
    }

    @Test("pipelined requests with read, unread and no bodies are answered in order; Connection: close ends it")
    func pipelined() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let port = Int(broker.url.split(separator: ":").last!)!
        let connection = try RawConnection(port: port)
        let json = "Content-Type: application/json\r\n"
        let create = #"{"client_user_id":"nobody"}"#
        connection.send(
            // No route: its body is never read.
            "POST /api/v1/no-such-route HTTP/1.1\r\nHost: t\r\n\(json)Content-Length: 11\r\n\r\n{\"a\":\"bcd\"}"
                + "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"
                // Refused before its body is read.
                + "POST /api/v1/events HTTP/1.1\r\nHost: t\r\n\(json)Content-Length: 2\r\n\r\n{}"
                // Read: a requester's login (for a user with no device, answered as any other).
                + "POST /api/v1/events HTTP/1.1\r\nHost: t\r\nAPI_KEY_ID: \(broker.apiKeyID)\r\n\(json)"
                + "Content-Length: \(create.utf8.count)\r\n\r\n\(create)"
                + "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        let answers = connection.readToEnd()
        #expect(Self.statuses(answers) == ["404", "200", "401", "201", "200"], "\(answers)")
        #expect(answers.contains("requester_token"))
    }

    @Test("a request the parser cannot read gets a 400 and the connection closes")
    func unreadable() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let connection = try RawConnection(port: Int(broker.url.split(separator: ":").last!)!)
        connection.send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\nNOT HTTP AT ALL\r\n\r\n")
        let answers = connection.readToEnd()
        #expect(Self.statuses(answers) == ["200", "400"], "\(answers)")
    }
}
