import CountersignBroker
import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@Suite("standard OAuth 2.0: discovery, authorize, token, refresh rotation")
struct OAuthFlowTests {
    typealias Flow = VerificationFlowTests.Flow

    func authorizeURI(_ flow: Flow, method: String? = "S256", responseType: String = "code") -> String {
        var components = URLComponents(string: "/oauth/authorize")!
        components.queryItems =
            [
                .init(name: "response_type", value: responseType),
                .init(name: "client_id", value: flow.broker.apiKeyID),
                .init(name: "redirect_uri", value: VerificationFlowTests.redirect),
                .init(name: "code_challenge", value: flow.challenge), .init(name: "state", value: "st"),
                .init(name: "scope", value: "openid email"),
            ] + (method.map { [URLQueryItem(name: "code_challenge_method", value: $0)] } ?? [])
        return components.string!
    }

    func token(_ client: some TestClientProtocol, _ flow: Flow, _ fields: [String: String]) async throws
        -> (HTTPResponse.Status, [String: Any])
    {
        try await client.execute(
            uri: "/oauth/token", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
            body: flow.form(fields.merging(["client_id": flow.broker.apiKeyID]) { old, _ in old })
        ) { response in
            #expect(response.headers[.cacheControl] == "no-store")
            return (
                response.status,
                (try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]) ?? [:]
            )
        }
    }

    /// The claims of a JWT, unverified (the signature is other tests' concern).
    func claims(of token: Any?) throws -> [String: Any] {
        let parts = try #require((token as? String)?.split(separator: "."))
        let payload = try #require(Base64URL.decode(parts[1]))
        return try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
    }

    @Test("discovery names the endpoints, S256 and ES256")
    func discovery() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            try await client.execute(uri: "/.well-known/openid-configuration", method: .get) { response in
                let json =
                    try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                #expect(json?["issuer"] as? String == TestBroker.origin)
                #expect(json?["token_endpoint"] as? String == TestBroker.origin + "/oauth/token")
                #expect(json?["code_challenge_methods_supported"] as? [String] == ["S256"])
                #expect(json?["id_token_signing_alg_values_supported"] as? [String] == ["ES256"])
            }
        }
    }

    @Test("authorize refuses plain or missing challenge methods and other response types, with the state")
    func authorizeRefusals() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            try await client.execute(uri: authorizeURI(flow), method: .get) { #expect($0.status == .ok) }
            for (uri, error) in [
                (authorizeURI(flow, method: "plain"), "invalid_request"),
                (authorizeURI(flow, method: nil), "invalid_request"),
                (authorizeURI(flow, responseType: "token"), "unsupported_response_type"),
            ] {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == .seeOther)
                    let location = response.headers[.location] ?? ""
                    #expect(location.contains("error=\(error)") && location.contains("state=st"), "\(location)")
                }
            }
        }
    }

    @Test("code for tokens; the code once only; refresh rotates; a reused refresh token revokes the grant")
    func tokenLifecycle() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            let (_, redirect) = try await flow.verify(client)
            let grant = [
                "grant_type": "authorization_code", "code": redirect.code, "code_verifier": flow.verifier,
                "redirect_uri": VerificationFlowTests.redirect,
            ]
            for (change, value) in [("code_verifier", PKCE.newVerifier()), ("redirect_uri", "http://127.0.0.1/cb")] {
                var bad = grant
                bad[change] = value
                let (status, json) = try await token(client, flow, bad)
                #expect(status == .badRequest && json["error"] as? String == "invalid_grant", "\(change)")
            }
            let (status, first) = try await token(client, flow, grant)
            #expect(status == .ok, "\(first)")
            #expect(first["token_type"] as? String == "Bearer" && first["id_token"] is String)
            let refresh1 = try #require(first["refresh_token"] as? String)

            let (reuseStatus, reuse) = try await token(client, flow, grant)
            #expect(reuseStatus == .badRequest && reuse["error"] as? String == "invalid_grant")
            let (afterReuse, _) = try await token(
                client, flow, ["grant_type": "refresh_token", "refresh_token": refresh1])
            #expect(afterReuse == .badRequest, "a reused code revokes the tokens it bought")

            // A fresh grant to rotate.
            let second = try await Flow.fresh(flow, client)
            let (ok, tokens) = try await token(client, flow, second)
            #expect(ok == .ok)
            let r1 = try #require(tokens["refresh_token"] as? String)
            // Later refresh tokens are made later; auth_time must not follow them.
            flow.broker.clock.advance(by: 120)
            let (rotated, next) = try await token(client, flow, ["grant_type": "refresh_token", "refresh_token": r1])
            #expect(rotated == .ok && next["access_token"] is String)
            let r2 = try #require(next["refresh_token"] as? String)
            #expect(r2 != r1)
            let (_, later) = try await token(client, flow, ["grant_type": "refresh_token", "refresh_token": r2])
            let r3 = try #require(later["refresh_token"] as? String)
            #expect(
                try claims(of: later["id_token"])["auth_time"] as? Int
                    == claims(of: tokens["id_token"])["auth_time"] as? Int,
                "auth_time stays the time the user typed the code")
            let (replayed, replay) = try await token(
                client, flow, ["grant_type": "refresh_token", "refresh_token": r1])
            #expect(replayed == .badRequest && replay["error"] as? String == "invalid_grant")
            let (revoked, _) = try await token(client, flow, ["grant_type": "refresh_token", "refresh_token": r3])
            #expect(revoked == .badRequest, "the reuse revoked the whole family")
        }
    }

    @Test("unknown clients and grant types are refused")
    func refusals() async throws {
        let flow = try await Flow()
        try await flow.broker.test { client in
            try await client.execute(
                uri: "/oauth/token", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: "grant_type=authorization_code&client_id=ck_nobody&code=1.x")
            ) { #expect($0.status == .unauthorized) }
            let (status, json) = try await token(client, flow, ["grant_type": "password"])
            #expect(status == .badRequest && json["error"] as? String == "unsupported_grant_type")
        }
    }

    @Test("every refusal of a client is written as OAuth's error, and Basic is read form-encoded")
    func errorForm() async throws {
        let flow = try await Flow()
        let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        @Sendable func basic(_ id: String, _ secret: String) -> HTTPFields {
            form + [.authorization: "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString()]
        }
        @Sendable func answer(_ response: TestResponse) throws -> (HTTPResponse.Status, String?, String?) {
            #expect(response.headers[.cacheControl] == "no-store")
            #expect(response.headers[HTTPField.Name("Pragma")!] == "no-cache")
            let json = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
            #expect(json?["message"] == nil, "not the API's error document")
            #expect((json?["error_description"] as? String)?.isEmpty == false)
            return (response.status, json?["error"] as? String, response.headers[.wwwAuthenticate])
        }
        let key = flow.broker.apiKeyID
        let percentEncoded = key.replacingOccurrences(of: "_", with: "%5F")
        try await flow.broker.test { client in
            for uri in ["/oauth/token", "/oauth/bc-authorize"] {
                try await client.execute(
                    uri: uri, method: .post, headers: form, body: ByteBuffer(string: "grant_type=password")
                ) { response in
                    let (status, error, challenge) = try answer(response)
                    #expect(
                        status == .unauthorized && error == "invalid_client" && challenge?.hasPrefix("Basic") == true)
                }
                try await client.execute(
                    uri: uri, method: .post, headers: basic(key, "wrong"), body: ByteBuffer(string: "scope=openid")
                ) { response in
                    let (status, error, _) = try answer(response)
                    #expect(status == .unauthorized && error == "invalid_client", "a wrong secret")
                }
                try await client.execute(
                    uri: uri, method: .post, headers: basic(key, flow.broker.apiSecret),
                    body: ByteBuffer(string: "client_secret=\(flow.broker.apiSecret)")
                ) { response in
                    let (status, error, _) = try answer(response)
                    #expect(status == .badRequest && error == "invalid_request", "two methods at once")
                }
                try await client.execute(
                    uri: uri, method: .post,
                    headers: basic(key, flow.broker.apiSecret).replacing(.contentType, "application/json"),
                    body: ByteBuffer(string: "{}")
                ) { response in
                    let (status, error, _) = try answer(response)
                    #expect(status == .badRequest && error == "invalid_request", "not a form")
                }
            }
            try await client.execute(
                uri: "/oauth/token", method: .post, headers: basic(percentEncoded, flow.broker.apiSecret),
                body: ByteBuffer(string: "grant_type=password")
            ) { response in
                let (status, error, _) = try answer(response)
                #expect(status == .badRequest && error == "unsupported_grant_type", "authenticated: %5F is _")
            }
        }
    }
}

extension HTTPFields {
    fileprivate func replacing(_ name: HTTPField.Name, _ value: String) -> HTTPFields {
        var fields = self
        fields[name] = value
        return fields
    }
}

extension VerificationFlowTests.Flow {
    /// Another verification with a new verifier's worth of code: a token request body.
    static func fresh(_ flow: Self, _ client: some TestClientProtocol) async throws -> [String: String] {
        let (_, redirect) = try await flow.verify(client, email: "bob@example.com")
        return [
            "grant_type": "authorization_code", "code": redirect.code, "code_verifier": flow.verifier,
            "redirect_uri": VerificationFlowTests.redirect,
        ]
    }
}
