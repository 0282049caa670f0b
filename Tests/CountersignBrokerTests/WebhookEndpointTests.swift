import CountersignBroker
import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// An app backend manages its own webhook endpoints over the REST API, and
/// nobody else's.
@Suite("webhooks: endpoints over the REST API")
struct WebhookEndpointTests {
    struct Endpoint: Decodable {
        let id: String
        let url: String
        let types: [String]
        let secret: String?
        let previous_secret_until: String?
        let disabled_at: String?
    }
    struct Endpoints: Decodable { let endpoints: [Endpoint] }
    struct Message: Decodable {
        let id: String
        let endpoint_id: String
        let type: String?
        let state: String
    }
    struct Messages: Decodable { let messages: [Message] }

    static func body(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test("set, list, set types, rotate, delete: secrets shown once, bad URLs and types refused")
    func lifecycle() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let headers = broker.backendHeaders
            let created = try await client.execute(
                uri: "/api/v1/webhooks", method: .post, headers: headers,
                body: Self.body(#"{"url":"https://hooks.example/a","types":["event.approved"]}"#)
            ) { response in
                #expect(response.status == .created, "\(String(buffer: response.body))")
                return try decode(Endpoint.self, response)
            }
            #expect(created.id.hasPrefix("wh_") && created.types == ["event.approved"])
            #expect(WebhookSecret(try #require(created.secret)) != nil, "a whsec_ secret")
            // The same URL again: new types, the same secret, not shown.
            let updated = try await client.execute(
                uri: "/api/v1/webhooks", method: .post, headers: headers,
                body: Self.body(#"{"url":"https://hooks.example/a"}"#)
            ) { response in
                #expect(response.status == .ok)
                return try decode(Endpoint.self, response)
            }
            #expect(updated.id == created.id && updated.types == [] && updated.secret == nil)
            let stored = try #require(try await broker.store.webhookEndpoint(id: created.id))
            #expect(stored.secret.text == created.secret, "the secret kept")
            let listed = try await client.execute(uri: "/api/v1/webhooks", method: .get, headers: headers) {
                try decode(Endpoints.self, $0)
            }
            #expect(listed.endpoints.map(\.id) == [created.id] && listed.endpoints.allSatisfy { $0.secret == nil })

            let rotated = try await client.execute(
                uri: "/api/v1/webhooks/\(created.id)/rotate-secret", method: .post, headers: headers,
                body: Self.body(#"{"overlap":3600}"#)
            ) { response in
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                return try decode(Endpoint.self, response)
            }
            #expect(rotated.secret != nil && rotated.secret != created.secret && rotated.previous_secret_until != nil)
            let afterRotation = try #require(try await broker.store.webhookEndpoint(id: created.id))
            #expect(afterRotation.secrets(at: broker.clock.now).map(\.text) == [rotated.secret, created.secret])
            broker.clock.advance(by: 3600)
            #expect(afterRotation.secrets(at: broker.clock.now).map(\.text) == [rotated.secret])

            for (body, code) in [
                (#"{"url":"http://hooks.example/a"}"#, HTTPResponse.Status.badRequest),
                (#"{"url":"ftp://hooks.example/a"}"#, .badRequest),
                (#"{"url":"https://u:p@hooks.example/a"}"#, .badRequest),
                (#"{"url":"https://hooks*"}"#, .badRequest),
                (#"{"url":"https://hooks example/a"}"#, .badRequest),
                (#"{"url":"https://[::1*]/a"}"#, .badRequest),
                (#"{"url":"https://hooks.example/\u00e9"}"#, .badRequest),
                (#"{"url":"https://hooks.example/b","types":["event.nope"]}"#, .badRequest),
                (#"{"types":[]}"#, .badRequest),
            ] {
                try await client.execute(
                    uri: "/api/v1/webhooks", method: .post, headers: headers, body: Self.body(body)
                ) {
                    #expect($0.status == code, "\(body): \(String(buffer: $0.body))")
                }
            }
            try await client.execute(
                uri: "/api/v1/webhooks/\(created.id)/rotate-secret", method: .post, headers: headers,
                body: Self.body(#"{"overlap":604801}"#)
            ) { #expect($0.status == .badRequest, "an overlap past a week") }
            try await client.execute(uri: "/api/v1/webhooks/\(created.id)", method: .delete, headers: headers) {
                #expect($0.status == .noContent)
            }
            try await client.execute(uri: "/api/v1/webhooks/\(created.id)", method: .delete, headers: headers) {
                #expect($0.status == .notFound)
            }
            #expect(try await broker.store.webhookEndpoints(apiKeyID: broker.apiKeyID).isEmpty)
            // Ten at most.
            for index in 0..<10 {
                try await client.execute(
                    uri: "/api/v1/webhooks", method: .post, headers: headers,
                    body: Self.body(#"{"url":"https://hooks.example/\#(index)"}"#)
                ) { #expect($0.status == .created) }
            }
            try await client.execute(
                uri: "/api/v1/webhooks", method: .post, headers: headers,
                body: Self.body(#"{"url":"https://hooks.example/11"}"#)
            ) { #expect($0.status == .conflict) }
        }
    }

    @Test("another app can neither see, rotate, enable, delete nor resend an app's endpoints and messages")
    func otherApps() async throws {
        let broker = try await TestBroker()
        let other = try await broker.addAPIKey(name: "other")
        let otherHeaders = TestBroker.backend(other.id, other.secret)
        try await broker.test { client in
            let created = try await client.execute(
                uri: "/api/v1/webhooks", method: .post, headers: broker.backendHeaders,
                body: Self.body(#"{"url":"https://hooks.example/a"}"#)
            ) { try decode(Endpoint.self, $0) }
            // A change of the app's user: one message to its endpoint.
            _ = try await broker.enroll(client)
            let messages = try await client.execute(
                uri: "/api/v1/webhooks/messages", method: .get, headers: broker.backendHeaders
            ) { try decode(Messages.self, $0) }
            #expect(messages.messages.map(\.type) == ["device.enrolled"])
            let message = try #require(messages.messages.first)
            #expect(message.endpoint_id == created.id && message.state == "queued")

            let theirs = try await client.execute(uri: "/api/v1/webhooks", method: .get, headers: otherHeaders) {
                try decode(Endpoints.self, $0)
            }
            #expect(theirs.endpoints.isEmpty)
            let theirMessages = try await client.execute(
                uri: "/api/v1/webhooks/messages", method: .get, headers: otherHeaders
            ) { try decode(Messages.self, $0) }
            #expect(theirMessages.messages.isEmpty)
            for (uri, method) in [
                ("/api/v1/webhooks/\(created.id)/rotate-secret", HTTPRequest.Method.post),
                ("/api/v1/webhooks/\(created.id)/enable", .post),
                ("/api/v1/webhooks/\(created.id)", .delete),
                ("/api/v1/webhooks/messages/\(message.id)/resend", .post),
            ] {
                try await client.execute(uri: uri, method: method, headers: otherHeaders) {
                    #expect($0.status == .notFound, "\(method) \(uri)")
                }
            }
            #expect(try await broker.store.webhookEndpoint(id: created.id) != nil, "still there")
            // Its own message, not failed: nothing to resend.
            try await client.execute(
                uri: "/api/v1/webhooks/messages/\(message.id)/resend", method: .post, headers: broker.backendHeaders
            ) { #expect($0.status == .conflict) }
            try await client.execute(
                uri: "/api/v1/webhooks/messages?state=sent", method: .get, headers: broker.backendHeaders
            ) { #expect($0.status == .badRequest) }
        }
    }
}
