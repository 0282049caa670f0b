import CountersignBroker
import CountersignCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// The steps most tests share, each checking its own answer.
extension TestBroker {
    struct Enrolled {
        let device: TestDevice
        let user: String
    }

    /// Enrolls a fresh device for `user` through the API, with `token` or
    /// one the backend asks for.
    func enroll(_ client: some TestClientProtocol, user: String = "alice", token: String? = nil) async throws
        -> Enrolled
    {
        var token = token
        if token == nil { token = try await enrollmentToken(client, user: user) }
        let device = TestDevice()
        let body: [String: AnyEncodable] = [
            "client_user_id": .init(user), "enrollment_token": .init(token ?? ""), "public_key": .init(device.jwk),
            "name": .init("laptop"),
        ]
        var headers = try await device.proofHeaders(.post, "/api/v1/enrollments", now: clock.now)
        headers[HTTPField.Name("API_KEY_ID")!] = apiKeyID
        try await client.execute(uri: "/api/v1/enrollments", method: .post, headers: headers, body: json(body)) {
            #expect($0.status == .created, "enroll: \(String(buffer: $0.body))")
        }
        return Enrolled(device: device, user: user)
    }

    func enrollmentToken(_ client: some TestClientProtocol, user: String) async throws -> String {
        try await client.execute(
            uri: "/api/v1/users/\(user)/enrollment-tokens", method: .post, headers: backendHeaders,
            body: json([String: String]())
        ) { response in
            #expect(response.status == .created)
            return try #require(try decode([String: String].self, response)["token"])
        }
    }

    /// A pending LOGIN created with the API key id alone.
    func requestLogin(_ client: some TestClientProtocol, user: String = "alice") async throws -> EventTicket {
        try await client.execute(
            uri: "/api/v1/events", method: .post, headers: appHeaders,
            body: json(["client_user_id": user, "requester_name": "new-laptop"])
        ) { response in
            #expect(response.status == .created, "create: \(String(buffer: response.body))")
            return try decode(EventTicket.self, response)
        }
    }

    func inbox(_ client: some TestClientProtocol, _ device: TestDevice, wait: Int = 0) async throws -> [InboxItem] {
        return try await client.execute(
            uri: "/api/v1/inbox?wait=\(wait)", method: .get,
            headers: try await device.proofHeaders(.get, "/api/v1/inbox", now: clock.now)
        ) { response in
            #expect(response.status == .ok, "inbox: \(String(buffer: response.body))")
            return try decode(Inbox.self, response).events
        }
    }

    /// Posts a decision JWS and returns the response.
    func submit(_ client: some TestClientProtocol, eventID: String, decision: String) async throws -> TestResponse {
        try await client.execute(
            uri: "/api/v1/events/\(eventID)/decision", method: .post, headers: [.contentType: "application/json"],
            body: json(["decision": decision]))
    }

    /// The event as its requester sees it.
    func poll(_ client: some TestClientProtocol, _ ticket: EventTicket, wait: Int = 0) async throws -> EventDocument {
        try await client.execute(
            uri: "/api/v1/events/\(ticket.event.ID)?wait=\(wait)", method: .get,
            headers: [.authorization: "Bearer \(ticket.requesterToken!)"]
        ) { response in
            #expect(response.status == .ok, "poll: \(String(buffer: response.body))")
            return try decode(EventDocument.self, response)
        }
    }
}

struct Inbox: Decodable { let events: [InboxItem] }

/// A type-erased Encodable for ad-hoc JSON bodies.
struct AnyEncodable: Encodable {
    let encodeValue: (any Encoder) throws -> Void
    init(_ value: some Encodable) { encodeValue = value.encode }
    func encode(to encoder: any Encoder) throws { try encodeValue(encoder) }
}
