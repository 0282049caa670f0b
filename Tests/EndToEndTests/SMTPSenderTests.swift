import AsyncHTTPClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// The SMTP sender against a real mail server process (Python's aiosmtpd,
/// scripts/smtp-test-server.py) with its own certificate authority.
@Suite("end to end: codes by email over SMTP")
struct SMTPSenderTests {
    /// A running mail server and where its mail lands.
    struct MailServer {
        let process: RunningProcess
        let port: Int
        let spool: URL
        let caFile: URL

        /// A server on a free port; a port another test took between being
        /// found free and being bound is given up for another.
        static func start(mode: String) async throws -> MailServer {
            for attempt in 1... {
                do {
                    return try await start(mode: mode, port: try freePort())
                } catch let failure as ProcessFailure
                    where attempt < 5 && failure.description.contains("address already in use")
                {
                    continue
                }
            }
            fatalError("unreachable")
        }

        private static func start(mode: String, port: Int) async throws -> MailServer {
            let work = try temporaryDirectory("smtp")
            let server = MailServer(
                process: try RunningProcess(
                    "/usr/bin/env",
                    [
                        "python3", scriptsDirectory.appendingPathComponent("smtp-test-server.py").path, "--port",
                        String(port), "--mode", mode, "--spool", work.appendingPathComponent("spool.jsonl").path,
                        "--ca-out", work.appendingPathComponent("ca.pem").path, "--username", "mailer",
                        "--password", "correct horse",
                    ]),
                port: port, spool: work.appendingPathComponent("spool.jsonl"),
                caFile: work.appendingPathComponent("ca.pem"))
            _ = try await server.process.waitFor("listening on")
            return server
        }

        /// The messages accepted so far.
        func messages() throws -> [[String: Any]] {
            guard let text = try? String(contentsOf: spool, encoding: .utf8) else { return [] }
            return try text.split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
        }

        /// The broker options that send through this server (reached at
        /// `port` when something stands between them).
        func brokerArguments(
            security: String = "starttls", password: String = "correct horse", trustCA: Bool = true,
            port: Int? = nil
        ) throws -> [String] {
            let passwordFile = try temporaryDirectory("smtp-secret").appendingPathComponent("password")
            try Data((password + "\n").utf8).write(to: passwordFile)
            return [
                "--sender", "smtp", "--smtp-host", "127.0.0.1", "--smtp-port", String(port ?? self.port),
                "--smtp-security",
                security, "--smtp-username", "mailer", "--smtp-password-file", passwordFile.path, "--smtp-from",
                "no-reply@countersign.test", "--smtp-from-name", "Countersign", "--log-level", "error",
            ] + (trustCA ? ["--smtp-ca-file", caFile.path] : [])
        }

        func stop() { process.stop() }
    }

    static let redirect = "com.example.app:/done"

    /// Registers the redirect URL and asks the hosted page to send a code.
    static func requestCode(
        _ broker: LiveBroker, apiKeyID: String? = nil, to address: String = "alice@example.com",
        type: String = "EMAIL"
    ) async throws -> FormAnswer {
        let key = apiKeyID ?? broker.apiKeyID
        let register = try RunningProcess(
            "device-broker", ["apikey", "set-redirect-urls", key, redirect, "--data-dir", broker.dataDirectory.path])
        #expect(try await register.exitCode() == 0)
        var form = URLComponents()
        form.queryItems = [
            .init(name: "api_key", value: key), .init(name: "redirect_url", value: redirect),
            .init(name: "type", value: type), .init(name: "state", value: "xyz"),
            .init(name: "code_challenge", value: PKCE.challenge(for: PKCE.newVerifier())),
            .init(name: "identifier", value: address),
        ]
        return try await postForm(broker.url + "/app/code", form: form)
    }

    @Test("STARTTLS, AUTH, and the emailed code completes the page")
    func startTLSDelivery() async throws {
        let server = try await MailServer.start(mode: "starttls")
        defer { server.stop() }
        let broker = try await LiveBroker.start(arguments: try server.brokerArguments())
        defer { broker.stop() }
        // An app name that needs RFC 2047 encoding in the subject.
        let create = try RunningProcess(
            "device-broker",
            ["apikey", "create", "--name", "Café Ünïcode", "--json", "--data-dir", broker.dataDirectory.path])
        #expect(try await create.exitCode() == 0)
        let keyID = try #require(
            (try JSONSerialization.jsonObject(with: create.json) as? [String: Any])?["api_key_id"]
                as? String)

        let answer = try await Self.requestCode(broker, apiKeyID: keyID)
        #expect(answer.status == .ok, "\(answer.page)")
        let message = try #require(try server.messages().last)
        #expect(message["tls"] as? Bool == true, "the message travelled over TLS")
        #expect(message["login"] as? String == "mailer")
        #expect(message["mail_from"] as? String == "no-reply@countersign.test")
        #expect(message["rcpt_tos"] as? [String] == ["alice@example.com"])
        let headers = try #require(message["headers"] as? [String: String])
        #expect(headers["Subject"] == "Your Café Ünïcode verification code")
        #expect(headers["From"] == "Countersign <no-reply@countersign.test>")
        #expect(headers["To"] == "alice@example.com")
        #expect(headers["Auto-Submitted"] == "auto-generated")
        let body = try #require(message["body"] as? String)
        let code = try #require(body.firstMatch(of: /code is (\d{6})\./)?.1)
        #expect(body.contains("It expires in 5 minutes."))

        // The code from the mail is the one the page takes.
        let challengeID = try #require(answer.page.firstMatch(of: /name="challenge_id" value="(\d+)"/)?.1)
        var form = URLComponents()
        form.queryItems = [
            .init(name: "challenge_id", value: String(challengeID)), .init(name: "code", value: String(code)),
        ]
        let verified = try await postForm(broker.url + "/app/verify", form: form)
        #expect(verified.status == .seeOther, "\(verified.page)")
        let location = try #require(verified.location)
        #expect(location.hasPrefix(Self.redirect + "?code=") && location.contains("state=xyz"))
    }

    @Test("implicit TLS (port 465 style)")
    func implicitTLS() async throws {
        let server = try await MailServer.start(mode: "tls")
        defer { server.stop() }
        let broker = try await LiveBroker.start(arguments: try server.brokerArguments(security: "tls"))
        defer { broker.stop() }
        let answer = try await Self.requestCode(broker)

        #expect(answer.status == .ok, "\(answer.page)")
        let message = try #require(try server.messages().last)
        #expect(message["tls"] as? Bool == true && message["login"] as? String == "mailer")
    }

    /// Each refusal: the page says the code could not be sent, and nothing
    /// left the broker in the clear.
    @Test(
        "refused: no STARTTLS offered, an untrusted certificate, plaintext injected after STARTTLS, a wrong password",
        arguments: [
            ("cleartext", true, "correct horse", "does not offer STARTTLS"),
            ("starttls", false, "correct horse", "CERTIFICATE_VERIFY_FAILED"),
            ("inject", true, "correct horse", "sent data after its STARTTLS answer"),
            ("starttls", true, "wrong", "refused the credentials (AUTH PLAIN): 535"),
        ])
    func refusals(mode: String, trustCA: Bool, password: String, reason: String) async throws {
        let server = try await MailServer.start(mode: mode)
        defer { server.stop() }
        let broker = try await LiveBroker.start(
            arguments: try server.brokerArguments(password: password, trustCA: trustCA))
        defer { broker.stop() }
        let answer = try await Self.requestCode(broker)
        #expect(answer.status == .badGateway, "\(answer.page)")
        #expect(answer.page.contains("We could not send the code"))
        #expect(try server.messages().isEmpty)
        // What the injecting server read after its forged answer: never a
        // credential in the clear (at most the start of a TLS handshake).
        let plaintext = (try? Data(contentsOf: server.spool.appendingPathExtension("plaintext"))) ?? Data()
        #expect(!String(decoding: plaintext, as: UTF8.self).contains("AUTH"))
        _ = try await broker.process.waitFor(NSRegularExpression.escapedPattern(for: reason))
        #expect(!broker.process.text.contains("correct horse"))
    }

    @Test("with only an SMTP sender, phone numbers are refused before any code is made")
    func phoneWithoutPhoneSender() async throws {
        let server = try await MailServer.start(mode: "starttls")
        defer { server.stop() }
        let broker = try await LiveBroker.start(arguments: try server.brokerArguments())
        defer { broker.stop() }
        let answer = try await Self.requestCode(broker, to: "+15550100000", type: "PHONE")
        #expect(answer.status == .seeOther, "\(answer.page)")
        #expect(answer.location?.contains("error=invalid_request") == true, "\(answer.location ?? "")")
        #expect(try server.messages().isEmpty)
    }
}
