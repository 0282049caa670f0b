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

    /// Request smuggling's classics and RFC 9112's framing rules, as raw
    /// bytes: each is refused with a 400 (never a 5xx) and the connection
    /// closes, with the requests before it answered in order.
    @Test(
        "ambiguous or broken framing gets a 400 and a close: CL with TE, two lengths, obfuscated TE, obs-fold, bare LF, negative length, an overflowing chunk size, a missing or repeated Host",
        arguments: [
            (
                "CL and TE",
                "POST /oauth/token HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                ["400"]
            ),
            (
                "two lengths",
                "POST /oauth/token HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde", ["400"]
            ),
            (
                "obfuscated TE",
                "POST /oauth/token HTTP/1.1\r\nHost: t\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", ["400"]
            ),
            ("obs-fold", "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Folded: a\r\n b\r\n\r\n", ["400"]),
            ("bare LF", "GET /healthz HTTP/1.1\nHost: t\n\n", ["400"]),
            ("negative length", "POST /oauth/token HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n", ["400"]),
            (
                "overflowing chunk size",
                "POST /oauth/token HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF1\r\nabc\r\n", ["400"]
            ),
            ("HTTP/1.1 without Host", "GET /healthz HTTP/1.1\r\n\r\n", ["400"]),
            ("two Hosts", "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", ["400"]),
            (
                "no Host after a good request",
                "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\nGET /healthz HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: t\r\n\r\n",
                ["200", "400"]
            ),
        ])
    func framing(_ name: String, _ bytes: String, _ expected: [String]) async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let connection = try RawConnection(port: Int(broker.url.split(separator: ":").last!)!, receiveTimeout: 60)
        #expect(connection.send(bytes))
        guard case .closed(let answers) = connection.readUntilClosed() else {
            Issue.record("\(name): the connection stayed open")
            return
        }
        #expect(Self.statuses(answers) == expected, "\(name): \(answers)")
        #expect(answers.lowercased().contains("connection: close"), "\(name): \(answers)")
    }

    @Test("an HTTP/1.0 request may leave Host out")
    func http10WithoutHost() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let connection = try RawConnection(port: Int(broker.url.split(separator: ":").last!)!, receiveTimeout: 60)
        #expect(connection.send("GET /healthz HTTP/1.0\r\n\r\n"))
        let answer = connection.readResponse()
        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer)")
    }

    @Test("every accepted connection has TCP keep-alive: a probe after 30 s of silence, so a held poll stays known")
    func keepAlive() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let port = Int(broker.url.split(separator: ":").last!)!
        // From an address of its own, so that the broker's end of this
        // connection is the one ss lists.
        let connection = try RawConnection(port: port, from: "127.0.0.71", receiveTimeout: 60)
        defer { _ = connection }
        var listed = ""
        var patience = WaitBudget(.seconds(30))
        while patience.left() {
            let ss = try RunningProcess(
                "/usr/bin/ss", ["-tnoH", "state", "established", "( sport = :\(port) and dst 127.0.0.71 )"])
            _ = try await ss.exitCode()
            listed = ss.text
            if listed.contains("keepalive") { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let timer = try #require(listed.firstMatch(of: #/timer:\(keepalive,([0-9.]+)(ms|sec|min)/#), "\(listed)")
        let seconds = Double(timer.output.1)! * (timer.output.2 == "ms" ? 0.001 : timer.output.2 == "min" ? 60 : 1)
        #expect(seconds <= 30, "the first probe is due within 30 s: \(listed)")
    }
}
