import CountersignBroker
import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// A leaked API secret key is rotated with an overlap, or the key revoked
/// at once; the attacks on both.
@Suite("API keys: rotation and revocation")
struct APIKeyLifecycleTests {
    struct Rotated: Decodable {
        let api_key_id: String
        let api_secret_key: String
    }

    @Test(
        "the backend rotates its secret: the new one works, the old one only until the overlap ends, and the change is audited"
    )
    func rotate() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let rotated = try await client.execute(
                uri: "/api/v1/apikey/rotate", method: .post, headers: broker.backendHeaders,
                body: ByteBuffer(string: #"{"overlap":3600}"#)
            ) { response in
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                return try decode(Rotated.self, response)
            }
            #expect(rotated.api_key_id == broker.apiKeyID && rotated.api_secret_key != broker.apiSecret)
            let fresh = TestBroker.backend(broker.apiKeyID, rotated.api_secret_key)
            for headers in [fresh, broker.backendHeaders] {
                try await client.execute(uri: "/api/v1/users/alice/devices", method: .get, headers: headers) {
                    #expect($0.status == .ok)
                }
            }
            broker.clock.advance(by: 3600)
            try await client.execute(uri: "/api/v1/users/alice/devices", method: .get, headers: broker.backendHeaders) {
                #expect($0.status == .unauthorized, "the old secret after its overlap")
            }
            try await client.execute(uri: "/api/v1/users/alice/devices", method: .get, headers: fresh) {
                #expect($0.status == .ok)
            }
            // Out of range, and without the secret.
            try await client.execute(
                uri: "/api/v1/apikey/rotate", method: .post, headers: fresh,
                body: ByteBuffer(string: #"{"overlap":-1}"#)
            ) { #expect($0.status == .badRequest) }
            try await client.execute(uri: "/api/v1/apikey/rotate", method: .post, headers: broker.appHeaders) {
                #expect($0.status == .unauthorized)
            }
        }
        let changes = try await broker.store.apiKeyChanges(id: broker.apiKeyID)
        #expect(changes.map(\.action) == [.rotated] && changes.first?.via == "rest")
    }

    @Test(
        "a revoked key is refused everywhere at once: its secret, its id alone, its devices, the hosted page, OAuth; another app is untouched"
    )
    func revoke() async throws {
        let broker = try await TestBroker()
        let other = try await broker.addAPIKey(name: "other")
        try await broker.store.setRedirectURLs(["http://127.0.0.1/cb"], apiKeyID: broker.apiKeyID)
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            try await client.execute(uri: "/api/v1/apikey/revoke", method: .post, headers: broker.backendHeaders) {
                #expect($0.status == .ok, "\(String(buffer: $0.body))")
            }
            try await client.execute(uri: "/api/v1/users/alice/devices", method: .get, headers: broker.backendHeaders) {
                #expect($0.status == .unauthorized, "its secret")
            }
            try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.appHeaders,
                body: try json(["client_user_id": "alice"])
            ) { #expect($0.status == .unauthorized, "its id alone") }
            try await client.execute(
                uri: "/api/v1/inbox", method: .get,
                headers: try await alice.device.proofHeaders(.get, "/api/v1/inbox", now: broker.clock.now)
            ) { #expect($0.status == .unauthorized, "its devices") }
            try await client.execute(
                uri: "/app?api_key=\(broker.apiKeyID)&redirect_url=http%3A%2F%2F127.0.0.1%2Fcb&type=EMAIL"
                    + "&code_challenge=\(PKCE.challenge(for: String(repeating: "v", count: 50)))",
                method: .get
            ) { #expect($0.status != .ok, "the hosted page") }
            try await client.execute(
                uri: "/oauth/token", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: "grant_type=refresh_token&refresh_token=x&client_id=\(broker.apiKeyID)")
            ) {
                #expect($0.status == .unauthorized, "OAuth's public client")
                #expect(String(buffer: $0.body).contains(#""error":"invalid_client""#))
            }
            try await client.execute(uri: "/api/v1/apikey/revoke", method: .post, headers: broker.backendHeaders) {
                #expect($0.status == .unauthorized, "revoked twice")
            }
            try await client.execute(
                uri: "/api/v1/users/alice/devices", method: .get, headers: TestBroker.backend(other.id, other.secret)
            ) { #expect($0.status == .ok, "another app") }
        }
        #expect(try await broker.store.apiKeyChanges(id: broker.apiKeyID).map(\.action) == [.revoked])
    }
}
