import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// `device-agent enroll --email`: the agent listens on loopback, a person
/// completes the hosted page, the browser lands on the agent.
@Suite("end to end: enrolling a first device by email")
struct VerifiedEnrollmentEndToEndTests {
    /// Plays the person at the hosted page with plain HTTP, as a browser would.
    func completePage(_ pageURL: String, email: String, broker: LiveBroker) async throws -> HTTPResponseStatus {
        func fetch(_ url: String, form: [String: String]? = nil) async throws -> (HTTPResponseStatus, String) {
            var request = HTTPClientRequest(url: url)
            // Never pooled: brokers of other tests come and go on reused ports.
            request.headers.add(name: "Connection", value: "close")
            if let form {
                var components = URLComponents()
                components.queryItems = form.map { URLQueryItem(name: $0.key, value: $0.value) }
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
                request.body = .bytes(
                    ByteBuffer(string: components.percentEncodedQuery!.replacingOccurrences(of: "+", with: "%2B")))
            }
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            return (response.status, String(buffer: try await response.body.collect(upTo: 1 << 20)))
        }
        let (_, page) = try await fetch(pageURL)
        var fields: [String: String] = [:]
        for match in page.matches(of: /<input type="hidden" name="([^"]+)" value="([^"]*)">/) {
            fields[String(match.1)] = String(match.2).replacingOccurrences(of: "&amp;", with: "&")
        }
        fields["identifier"] = email
        let (_, sent) = try await fetch(broker.url + "/app/code", form: fields)
        let challengeID = try #require(sent.firstMatch(of: /name="challenge_id" value="(\d+)"/)?.1)
        let outbox = broker.dataDirectory.appendingPathComponent("outbox.jsonl")
        let line = try #require(try String(contentsOf: outbox, encoding: .utf8).split(separator: "\n").last)
        let code = try #require(try JSONDecoder().decode([String: String].self, from: Data(line.utf8))["code"])
        // The client follows the 303 to the agent's listener, as a browser does.
        let (status, _) = try await fetch(
            broker.url + "/app/verify", form: ["challenge_id": String(challengeID), "code": code])
        return status
    }

    @Test("the verified address becomes the user; a second first device is refused")
    func enrollByEmail() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let register = try RunningProcess(
            "device-broker",
            [
                "apikey", "set-redirect-urls", broker.apiKeyID, "http://127.0.0.1/callback", "--data-dir",
                broker.dataDirectory.path,
            ])
        #expect(try await register.exitCode() == 0)

        let machine = try temporaryDirectory("machine-D").appendingPathComponent("countersign")
        let enroll = try broker.agent(
            ["enroll", "--email", "Dave@Example.com", "--no-browser"], configDirectory: machine, user: nil)
        let pageURL = try await enroll.waitFor(#"\s(http://127\.0\.0\.1:\d+/app\?\S+)"#)
        #expect(try await completePage(pageURL, email: "dave@example.com", broker: broker) == .ok)
        #expect(try await enroll.exitCode() == 0, "\(enroll.text)")
        #expect(enroll.text.contains("trusted device of dave@example.com"))
        let devices = try await broker.backend.devices(user: "dave@example.com")
        #expect(devices.count == 1)

        // The new device logs in as that user at once.
        let login = try broker.agent(["login"], configDirectory: machine, user: "dave@example.com")
        #expect(try await login.exitCode() == 0, "\(login.text)")

        let other = try temporaryDirectory("machine-E").appendingPathComponent("countersign")
        let second = try broker.agent(
            ["enroll", "--email", "dave@example.com", "--no-browser"], configDirectory: other, user: nil)
        let secondURL = try await second.waitFor(#"\s(http://127\.0\.0\.1:\d+/app\?\S+)"#)
        _ = try await completePage(secondURL, email: "dave@example.com", broker: broker)
        #expect(try await second.exitCode() == 1)
        #expect(second.text.contains("already has a trusted device"))
        #expect(
            !FileManager.default.fileExists(atPath: other.path), "no key, nor the directory made for it, left behind")
    }
}
