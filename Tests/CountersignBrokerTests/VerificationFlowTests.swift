import CountersignBroker
import CountersignClient
import CountersignCore
import CountersignSQLite
import CountersignSenders
import Foundation
import HTTPTypes
import HummingbirdTesting
import JWTKit
import NIOCore
import Synchronization
import Testing

/// Codes the broker "sent", as a real sender would deliver them.
final class CapturingSender: CodeSender {
    private let sent = Mutex<[(String, String)]>([])
    func send(_ message: CodeMessage) async throws {
        sent.withLock { $0.append((message.identifier, message.code)) }
    }
    func lastCode(to identifier: String) -> String? { sent.withLock { $0.last { $0.0 == identifier }?.1 } }
    var count: Int { sent.withLock { $0.count } }
}

@Suite("email/phone verification: hosted page and get_identity")
struct VerificationFlowTests {
    static let redirect = "com.example.app:/done"

    struct Flow {
        let broker: TestBroker
        let sender: CapturingSender
        let verifier = PKCE.newVerifier()
        var challenge: String { PKCE.challenge(for: verifier) }

        init() async throws {
            sender = CapturingSender()
            broker = try await TestBroker(sender: sender)
            try await broker.store.setRedirectURLs(
                [VerificationFlowTests.redirect, "http://127.0.0.1/cb"], apiKeyID: broker.apiKeyID)
        }

        func pageURI(
            redirect: String = VerificationFlowTests.redirect, type: String = "EMAIL", challenge: String? = nil,
            state: String = "xyz"
        ) -> String {
            var components = URLComponents(string: "/app")!
            components.queryItems = [
                .init(name: "api_key", value: broker.apiKeyID), .init(name: "redirect_url", value: redirect),
                .init(name: "type", value: type), .init(name: "code_challenge", value: challenge ?? self.challenge),
                .init(name: "state", value: state),
            ]
            return components.string!
        }

        func form(_ fields: [String: String]) -> ByteBuffer {
            var components = URLComponents()
            components.queryItems = fields.map { URLQueryItem(name: $0.key, value: $0.value) }
            return ByteBuffer(string: components.percentEncodedQuery!.replacingOccurrences(of: "+", with: "%2B"))
        }

        static let formHeaders: HTTPFields = [
            .contentType: "application/x-www-form-urlencoded", .userAgent: "TestBrowser/1.0",
        ]

        /// Sends the code to `email`; returns the challenge id from the page.
        func sendCode(_ client: some TestClientProtocol, email: String = "Alice@Example.com", state: String = "xyz")
            async throws -> String
        {
            try await client.execute(
                uri: "/app/code", method: .post, headers: Self.formHeaders,
                body: form([
                    "api_key": broker.apiKeyID, "redirect_url": VerificationFlowTests.redirect, "type": "EMAIL",
                    "code_challenge": challenge, "state": state, "identifier": email,
                ])
            ) { response in
                #expect(response.status == .ok)
                let html = String(buffer: response.body)
                #expect(html.contains(email.lowercased()))
                let match = try #require(html.firstMatch(of: /name="challenge_id" value="(\d+)"/))
                return String(match.1)
            }
        }

        /// Sends a code, types it, and returns the challenge id and the redirect.
        func verify(_ client: some TestClientProtocol, email: String = "alice@example.com") async throws
            -> (challengeID: String, redirect: (code: String, state: String?, challengeID: String))
        {
            let challengeID = try await sendCode(client, email: email)
            let code = try #require(sender.lastCode(to: email))
            return (challengeID, try authorizationCode(try await submit(client, challengeID: challengeID, code: code)))
        }

        /// Types a code; returns the response.
        func submit(_ client: some TestClientProtocol, challengeID: String, code: String) async throws -> TestResponse {
            try await client.execute(
                uri: "/app/verify", method: .post, headers: Self.formHeaders,
                body: form(["challenge_id": challengeID, "code": code]))
        }

        /// The authorization code from a successful redirect.
        func authorizationCode(_ response: TestResponse) throws -> (code: String, state: String?, challengeID: String) {
            #expect(response.status == .seeOther)
            let location = try #require(response.headers[.location])
            #expect(location.hasPrefix(VerificationFlowTests.redirect + "?"))
            let items = URLComponents(string: location)?.queryItems ?? []
            func value(_ name: String) -> String? { items.first { $0.name == name }?.value }
            return (try #require(value("code")), value("state"), try #require(value("challenge_id")))
        }

        func getIdentity(
            _ client: some TestClientProtocol, code: String, challengeID: String, verifier: String? = nil,
            redirect: String = VerificationFlowTests.redirect
        ) async throws -> TestResponse {
            try await client.execute(
                uri: "/api/v0/verify/get_identity?oauth_token=true", method: .post,
                headers: [HTTPField.Name("API_KEY_ID")!: broker.apiKeyID, .contentType: "application/json"],
                body: ByteBuffer(
                    string: """
                        {"code_verifier": "\(verifier ?? self.verifier)", "authorization_code": "\(code)",
                         "challenge_id": \(challengeID), "redirect_url": "\(redirect)"}
                        """))
        }
    }

    @Test("the whole flow: page, code, redirect with code and state, get_identity in the original shape")
    func happyPath() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            try await client.execute(uri: flow.pageURI(), method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/html") == true)
                #expect(response.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
                #expect(String(buffer: response.body).contains("demo"))
            }
            let (challengeID, redirect) = try await flow.verify(client)
            #expect(redirect.state == "xyz" && redirect.challengeID == challengeID)
            let response = try await flow.getIdentity(client, code: redirect.code, challengeID: challengeID)
            #expect(response.status == .ok, "\(String(buffer: response.body))")
            let json = try #require(
                try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any])
            let identifier = try #require(json["identifier"] as? [String: Any])
            #expect(identifier["identifier"] as? String == "alice@example.com")
            #expect(identifier["identifier_type"] as? String == "EMAIL")
            #expect(identifier["device_type"] as? String == "BROWSER")
            #expect(identifier["device_name"] as? String == "TestBrowser/1.0")
            #expect(identifier["deleted_at"] as? String == "0001-01-01T00:00:00Z")
            for field in ["ID", "created_at", "updated_at", "expiry", "timestamp"] {
                #expect(identifier[field] != nil, "\(field)")
            }
            let tokens = try #require(json["oauth_token"] as? [String: Any])
            #expect(tokens["token_type"] as? String == "Bearer" && tokens["auth_method"] as? String == "OTP")
            #expect(tokens["expires_in"] as? Int == 3600)
            for field in ["access_token", "id_token", "refresh_token"] { #expect(tokens[field] is String, "\(field)") }
            #expect(json["token"] is [String: Any] && json["user"] is [String: Any])
            let header = try CompactJWS.header(of: try #require(tokens["id_token"] as? String))
            #expect(header.alg == "ES256" && header.kid == flow.broker.environment.keys.currentKeyID)
            let verifier = try await BrokerTokenVerifier(
                jwksJSON: String(
                    decoding: try WireCoding.encoder().encode(flow.broker.environment.keys.jwks), as: UTF8.self),
                issuer: TestBroker.origin)
            let idToken = try await verifier.verifyIDToken(
                try #require(tokens["id_token"] as? String), apiKeyID: flow.broker.apiKeyID)
            #expect(idToken.email == "alice@example.com" && idToken.emailVerified == true)
            let access = try await verifier.verifyAccessToken(
                try #require(tokens["access_token"] as? String), apiKeyID: flow.broker.apiKeyID)
            #expect(access.sub == idToken.sub && access.clientID == flow.broker.apiKeyID)
        }
    }

    @Test("an unregistered redirect URL gets an error page, never a redirect")
    func unregisteredRedirect() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            for redirect in ["https://evil.example/cb", "com.example.app:/other", "com.example.app:/done#x"] {
                try await client.execute(uri: flow.pageURI(redirect: redirect), method: .get) { response in
                    #expect(response.status == .badRequest)
                    #expect(response.headers[.location] == nil)
                    #expect(String(buffer: response.body).contains("not registered"))
                }
            }
            // A loopback redirect matches on any port (RFC 8252 §7.3).
            try await client.execute(uri: flow.pageURI(redirect: "http://127.0.0.1:53123/cb"), method: .get) {
                #expect($0.status == .ok)
            }
        }
    }

    @Test("a bad challenge or type goes back to the app as an OAuth error with the state")
    func badParameters() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            for uri in [
                flow.pageURI(challenge: "plain-challenge-not-a-hash"), flow.pageURI(challenge: ""),
                flow.pageURI(type: "FAX"),
                flow.pageURI() + "&code_challenge_method=plain",
            ] {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == .seeOther)
                    let location = try #require(response.headers[.location])
                    #expect(location.hasPrefix(VerificationFlowTests.redirect + "?error=invalid_request"))
                    #expect(location.contains("state=xyz"))
                }
            }
        }
    }

    @Test("a field the form does not read is ignored however it is written; one it reads, sent twice, is refused")
    func unknownFormFields() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            let challengeID = try await flow.sendCode(client)
            let code = try #require(flow.sender.lastCode(to: "alice@example.com"))
            // Sent twice: refused, and the code is not spent.
            let twice = try await client.execute(
                uri: "/app/verify", method: .post, headers: Flow.formHeaders,
                body: ByteBuffer(string: "challenge_id=\(challengeID)&challenge_id=\(challengeID)&code=\(code)"))
            #expect(twice.status == .badRequest)
            #expect(String(buffer: twice.body).contains("malformed_form"), "\(String(buffer: twice.body))")
            // Fields nobody reads, repeated and bracketed, next to the real ones.
            let extra = try await client.execute(
                uri: "/app/verify", method: .post, headers: Flow.formHeaders,
                body: ByteBuffer(string: "a=1&a=2&b[=3&challenge_id=\(challengeID)&code=\(code)&c"))
            _ = try flow.authorizationCode(extra)
        }
    }

    @Test("wrong codes are counted; the fifth closes the challenge, and the right code no longer works")
    func bruteForce() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            let challengeID = try await flow.sendCode(client)
            let code = try #require(flow.sender.lastCode(to: "alice@example.com"))
            let wrong = code == "000000" ? "000001" : "000000"
            for attempt in 1...5 {
                let response = try await flow.submit(client, challengeID: challengeID, code: wrong)
                #expect(response.headers[.location] == nil)
                let html = String(buffer: response.body)
                #expect(attempt < 5 ? html.contains("\(5 - attempt) tr") : html.contains("Too many wrong codes"))
            }
            let late = try await flow.submit(client, challengeID: challengeID, code: code)
            #expect(late.status == .tooManyRequests && late.headers[.location] == nil)
            #expect(String(buffer: late.body).contains("error=access_denied"))
            // A re-send does not reset the count.
            try await client.execute(
                uri: "/app/resend", method: .post, headers: Flow.formHeaders,
                body: flow.form(["challenge_id": challengeID])
            ) { #expect($0.status == .tooManyRequests && flow.sender.count == 1) }
        }
    }

    @Test("a code past its lifetime is refused; a new one works")
    func expiredCode() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            let challengeID = try await flow.sendCode(client)
            let old = try #require(flow.sender.lastCode(to: "alice@example.com"))
            flow.broker.clock.advance(by: 300)
            let response = try await flow.submit(client, challengeID: challengeID, code: old)
            #expect(response.status == .gone && String(buffer: response.body).contains("expired"))
            try await client.execute(
                uri: "/app/resend", method: .post, headers: Flow.formHeaders,
                body: flow.form(["challenge_id": challengeID])
            ) { #expect($0.status == .ok) }
            let fresh = try #require(flow.sender.lastCode(to: "alice@example.com"))
            _ = try flow.authorizationCode(try await flow.submit(client, challengeID: challengeID, code: fresh))
        }
    }

    @Test("get_identity refuses a wrong verifier, redirect URL or challenge id, and a second or late use")
    func redemptionAttacks() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            let (challengeID, redirect) = try await flow.verify(client)
            for (verifier, url, id, msg) in [
                (PKCE.newVerifier(), VerificationFlowTests.redirect, challengeID, "Invalid code verifier"),
                (flow.challenge, VerificationFlowTests.redirect, challengeID, "Invalid code verifier"),
                (
                    String(flow.verifier.prefix(42)), VerificationFlowTests.redirect, challengeID,
                    "Invalid code verifier"
                ),
                (flow.verifier + "!", VerificationFlowTests.redirect, challengeID, "Invalid code verifier"),
                (flow.verifier, "http://127.0.0.1/cb", challengeID, "Redirect URL mismatch"),
                (flow.verifier, VerificationFlowTests.redirect, "12345", "Challenge not found"),
            ] {
                let response = try await flow.getIdentity(
                    client, code: redirect.code, challengeID: id, verifier: verifier, redirect: url)
                #expect(response.status == .badRequest)
                #expect(String(buffer: response.body).contains(msg), "\(msg)")
            }
            let first = try await flow.getIdentity(client, code: redirect.code, challengeID: challengeID)
            #expect(first.status == .ok)
            let refresh = try #require(
                (try JSONSerialization.jsonObject(with: Data(first.body.readableBytesView)) as? [String: Any])
                    .flatMap { $0["oauth_token"] as? [String: Any] }?["refresh_token"] as? String)
            let second = try await flow.getIdentity(client, code: redirect.code, challengeID: challengeID)
            #expect(second.status == .badRequest && String(buffer: second.body).contains("Challenge Expired"))
            // The reuse revoked what the first use bought.
            #expect(try await flow.broker.store.refreshToken(digest: SecretToken.digest(refresh))?.revokedAt != nil)
        }
    }

    @Test("an authorization code past five minutes is expired")
    func lateRedemption() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            let (challengeID, redirect) = try await flow.verify(client)
            flow.broker.clock.advance(by: 301)
            let response = try await flow.getIdentity(client, code: redirect.code, challengeID: challengeID)
            #expect(response.status == .badRequest && String(buffer: response.body).contains("Challenge Expired"))
        }
    }
}

/// A delivery channel that is down.
struct FailingSender: CodeSender {
    func send(_ message: CodeMessage) async throws {
        throw SenderFailure("down")
    }
}

@Suite("email/phone verification: a sender that fails")
struct FailingSenderTests {
    @Test("the page says the code could not be sent, and no code leaks")
    func failedSend() async throws {
        let broker = try await TestBroker(sender: FailingSender())
        try await broker.store.setRedirectURLs([VerificationFlowTests.redirect], apiKeyID: broker.apiKeyID)
        let verifier = PKCE.newVerifier()
        try await broker.test { client in
            var components = URLComponents()
            components.queryItems = [
                .init(name: "api_key", value: broker.apiKeyID),
                .init(name: "redirect_url", value: VerificationFlowTests.redirect),
                .init(name: "type", value: "EMAIL"),
                .init(name: "code_challenge", value: PKCE.challenge(for: verifier)),
                .init(name: "identifier", value: "alice@example.com"),
            ]
            try await client.execute(
                uri: "/app/code", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: components.percentEncodedQuery!)
            ) { response in
                #expect(response.status == .badGateway)
                #expect(response.headers[.contentType]?.hasPrefix("text/html") == true)
                #expect(String(buffer: response.body).contains("could not send the code"))
            }
        }
    }
}

@Suite("enrolling a first device by a verified email address")
struct VerifiedEnrollmentTests {
    typealias Flow = VerificationFlowTests.Flow

    func enroll(
        _ client: some TestClientProtocol, _ flow: Flow, device: TestDevice, code: String, challengeID: String
    ) async throws -> (HTTPResponse.Status, String?) {
        var headers = try await device.proofHeaders(.post, "/api/v1/enrollments", now: flow.broker.clock.now)
        headers[HTTPField.Name("API_KEY_ID")!] = flow.broker.apiKeyID
        let body: [String: AnyEncodable] = [
            "public_key": .init(device.jwk), "name": .init("laptop"),
            "verification": .init([
                "authorization_code": AnyEncodable(code), "code_verifier": AnyEncodable(flow.verifier),
                "challenge_id": AnyEncodable(Int64(challengeID)!),
                "redirect_url": AnyEncodable(VerificationFlowTests.redirect),
            ]),
        ]
        return try await client.execute(uri: "/api/v1/enrollments", method: .post, headers: headers, body: json(body)) {
            ($0.status, errorCode($0) ?? (try? decode(DeviceDocument.self, $0))?.clientUserID)
        }
    }

    @Test("the verified address becomes the user; once the user has a device, this path is closed")
    func firstDeviceOnly() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            let (challengeID, redirect) = try await flow.verify(client)
            let first = TestDevice()
            #expect(
                try await enroll(client, flow, device: first, code: redirect.code, challengeID: challengeID)
                    == (.created, "alice@example.com"))
            #expect(
                try await enroll(client, flow, device: TestDevice(), code: redirect.code, challengeID: challengeID)
                    == (.forbidden, "invalid_verification"), "the code is single use")
            let (secondID, second) = try await flow.verify(client)
            #expect(
                try await enroll(client, flow, device: TestDevice(), code: second.code, challengeID: secondID)
                    == (.conflict, "has_trusted_device"), "a further device must be approved by a trusted one")
            // The enrolled device is a trusted device of that user.
            try await client.execute(
                uri: "/api/v1/users/alice@example.com/devices", method: .get, headers: flow.broker.backendHeaders
            ) { response in
                #expect(String(buffer: response.body).contains(first.id))
            }
        }
    }
}
