import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CountersignBroker

/// Where the broker once answered otherwise than proto/openapi.yaml says.
@Suite("the contract's edges")
struct ContractTests {
    @Test("openapi's ErrorCode lists every code of the broker's error table, and no other")
    func errorCodeTable() throws {
        let openAPI = try String(
            contentsOf: vectorFile("").deletingLastPathComponent().appendingPathComponent("openapi.yaml"),
            encoding: .utf8)
        // The enum's items, one per line under `ErrorCode:`'s `enum:`.
        let lines = openAPI.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex(of: "    ErrorCode:"))
        let items = try #require(lines[start...].firstIndex(of: "      enum:"))
        let listed = lines[(items + 1)...].prefix { $0.hasPrefix("        - ") }.map { String($0.dropFirst(10)) }
        let table = ErrorCode.allCases.map(\.rawValue)
        #expect(Set(listed).subtracting(table).sorted() == [], "listed in openapi, not in the table")
        #expect(Set(table).subtracting(listed).sorted() == [], "in the table, not listed in openapi")
        #expect(listed.count == Set(listed).count, "each listed once")
    }

    @Test("a path that exists under other methods is a 405 naming them in Allow; an unknown path is a 404")
    func methodNotAllowed() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            for (method, uri, allow) in [
                (HTTPRequest.Method("TRACE")!, "/healthz", "GET"), (.post, "/readyz", "GET"),
                (.delete, "/api/v1/inbox", "GET"), (.put, "/api/v1/events/ev_x", "DELETE, GET"),
                (.get, "/api/v1/events/ev_x/decision", "POST"), (.patch, "/api/v1/devices/dv_1", "DELETE"),
                (.options, "/api/v1/devices/self", "GET"),
            ] {
                try await client.execute(uri: uri, method: method) { response in
                    #expect(response.status == .methodNotAllowed, "\(method) \(uri)")
                    #expect(response.headers[.allow] == allow, "\(method) \(uri)")
                    #expect(errorCode(response) == "method_not_allowed")
                }
            }
            try await client.execute(uri: "/api/v1/no-such-route", method: .delete) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    @Test("enrollment-tokens takes no body or a JSON object; an array, a string or broken JSON is a 400")
    func enrollmentTokenBody() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            var headers = broker.backendHeaders
            headers[.contentType] = "application/json"
            for body in ["[1]", #""token""#, "{", "null"] {
                try await client.execute(
                    uri: "/api/v1/users/alice/enrollment-tokens", method: .post, headers: headers,
                    body: ByteBuffer(string: body)
                ) { response in
                    #expect(response.status == .badRequest, "\(body): \(String(buffer: response.body))")
                }
            }
            for body in [nil, "{}", #"{"note":"ignored"}"#] {
                try await client.execute(
                    uri: "/api/v1/users/alice/enrollment-tokens", method: .post, headers: headers,
                    body: body.map { ByteBuffer(string: $0) }
                ) { response in
                    #expect(response.status == .created, "\(body ?? "no body"): \(String(buffer: response.body))")
                }
            }
        }
    }

    @Test("the hosted page reads + in its query as a space, as forms and OAuth clients write it")
    func plusInQuery() async throws {
        let broker = try await TestBroker()
        try await broker.store.setRedirectURLs(["http://127.0.0.1/cb"], apiKeyID: broker.apiKeyID)
        let challenge = PKCE.challenge(for: "v" + String(repeating: "x", count: 50))
        try await broker.test { client in
            for path in ["/app?type=EMAIL&", "/oauth/authorize?response_type=code&code_challenge_method=S256&"] {
                let uri =
                    path + "api_key=\(broker.apiKeyID)&client_id=\(broker.apiKeyID)"
                    + "&redirect_url=http%3A%2F%2F127.0.0.1%2Fcb&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb"
                    + "&code_challenge=\(challenge)&state=two+words%2Bplus"
                try await client.execute(uri: uri, method: .get) { response in
                    let page = String(buffer: response.body)
                    #expect(response.status == .ok, "\(uri): \(page)")
                    #expect(page.contains(#"name="state" value="two words+plus""#), "\(page)")
                }
            }
        }
    }

    @Test("cancel takes the form its contract names: the app, its redirect URL and the state")
    func cancel() async throws {
        let broker = try await TestBroker()
        try await broker.store.setRedirectURLs(["http://127.0.0.1/cb"], apiKeyID: broker.apiKeyID)
        try await broker.test { client in
            try await client.execute(
                uri: "/app/cancel", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(
                    string: "api_key=\(broker.apiKeyID)&redirect_url=http%3A%2F%2F127.0.0.1%2Fcb&state=s+1")
            ) { response in
                #expect(response.status == .seeOther, "\(String(buffer: response.body))")
                let location = try #require(response.headers[.location])
                #expect(location.hasPrefix("http://127.0.0.1/cb?error=access_denied"), "\(location)")
                #expect(location.contains("state=s%201"), "\(location)")
            }
        }
    }
}
