import AsyncHTTPClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// The webhook sender against a real receiver process that checks the
/// HMAC signature on its own (Python's hmac module, not the broker's code).
@Suite("end to end: codes through the signed webhook")
struct WebhookSenderTests {
    static let receiver = #"""
        import hashlib, hmac, http.server, json, signal, sys
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        port, secret, log = int(sys.argv[1]), open(sys.argv[2], "rb").read().strip(), sys.argv[3]
        class Hook(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                stamp = self.headers["Countersign-Timestamp"]
                expected = "v1=" + hmac.new(secret, stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
                valid = hmac.compare_digest(expected, self.headers["Countersign-Signature"] or "")
                with open(log, "a") as out:
                    out.write(json.dumps({"valid": valid, "body": json.loads(body)}) + "\n")
                self.send_response(204 if valid else 401)
                self.end_headers()
            def log_message(self, *args):
                pass
        http.server.HTTPServer(("127.0.0.1", port), Hook).serve_forever()
        """#

    @Test("the code reaches the receiver, signed; the page then asks for it")
    func signedDelivery() async throws {
        let work = try temporaryDirectory("webhook")
        let secretFile = work.appendingPathComponent("secret")
        try Data(SecretToken.generate(bytes: 32).utf8).write(to: secretFile)
        let log = work.appendingPathComponent("received.jsonl")
        let port = try freePort()
        let receiver = try RunningProcess(
            "/usr/bin/env", ["python3", "-c", Self.receiver, String(port), secretFile.path, log.path])
        defer { receiver.stop() }
        // Up once it answers anything (a GET gets 501 from it).
        let deadline = ContinuousClock.now + .seconds(20)
        while (try? await HTTPClient.shared.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(port)/"), timeout: .seconds(2))) == nil
        {
            guard ContinuousClock.now < deadline else {
                throw ProcessFailure("the receiver did not start: \(receiver.text)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let broker = try await LiveBroker.start(arguments: [
            "--sender", "webhook", "--webhook-url", "http://127.0.0.1:\(port)/hook", "--webhook-secret-file",
            secretFile.path,
        ])
        defer { broker.stop() }
        let register = try RunningProcess(
            "device-broker",
            [
                "apikey", "set-redirect-urls", broker.apiKeyID, "com.example.app:/done", "--data-dir",
                broker.dataDirectory.path,
            ])
        #expect(try await register.exitCode() == 0)

        var form = URLComponents()
        form.queryItems = [
            .init(name: "api_key", value: broker.apiKeyID), .init(name: "redirect_url", value: "com.example.app:/done"),
            .init(name: "type", value: "PHONE"),
            .init(name: "code_challenge", value: PKCE.challenge(for: PKCE.newVerifier())),
            .init(name: "identifier", value: "+1 (555) 010-0000"),
        ]
        let answer = try await postForm(broker.url + "/app/code", form: form)
        #expect(answer.status == .ok, "\(answer.page)")
        #expect(answer.page.contains("+15550100000"))

        let line = try #require(try String(contentsOf: log, encoding: .utf8).split(separator: "\n").last)
        let received = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(received["valid"] as? Bool == true, "the signature checks out with the shared secret")
        let body = try #require(received["body"] as? [String: Any])
        #expect(body["to"] as? String == "+15550100000" && body["channel"] as? String == "sms")
        #expect((body["code"] as? String)?.count == 6)
    }
}
