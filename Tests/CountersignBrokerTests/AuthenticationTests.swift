import CountersignBroker
import CountersignCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@Suite("authentication: API keys, device proofs, enrollment")
struct AuthenticationTests {
    @Test("API key id + secret work as API_KEY_ID/API_SECRET_KEY headers and as Basic; wrong ones are 401")
    func apiKeys() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let uri = "/api/v1/users/alice/devices"
            let headers: HTTPFields = [
                HTTPField.Name("API_KEY_ID")!: broker.apiKeyID, HTTPField.Name("API_SECRET_KEY")!: broker.apiSecret,
            ]
            try await client.execute(uri: uri, method: .get, headers: headers) { #expect($0.status == .ok) }
            try await client.execute(uri: uri, method: .get, headers: broker.backendHeaders) {
                #expect($0.status == .ok)
            }
            for bad in [
                TestBroker.backend(broker.apiKeyID, "wrong"), TestBroker.backend("ck_unknown", broker.apiSecret),
                [.authorization: "Basic !!!"], [HTTPField.Name("API_KEY_ID")!: broker.apiKeyID], [:],
            ] {
                try await client.execute(uri: uri, method: .get, headers: bad) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers[.contentType] == "application/json")
                }
            }
        }
    }

    @Test("one app's secret reads nothing of another app's users")
    func appIsolation() async throws {
        let broker = try await TestBroker()
        let other = try await broker.addAPIKey(name: "other")
        try await broker.test { client in
            _ = try await broker.enroll(client)
            let ticket = try await broker.requestLogin(client)
            try await client.execute(
                uri: "/api/v1/events/\(ticket.event.ID)", method: .get,
                headers: TestBroker.backend(other.id, other.secret)
            ) { #expect($0.status == .notFound) }
            struct Devices: Decodable { let devices: [DeviceDocument] }
            let devices = try await client.execute(
                uri: "/api/v1/users/alice/devices", method: .get, headers: TestBroker.backend(other.id, other.secret)
            ) { try decode(Devices.self, $0).devices }
            #expect(devices.isEmpty)
        }
    }

    @Test("only the requester's token collects a pending event's outcome")
    func requesterBinding() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            _ = try await broker.enroll(client)
            let ticket = try await broker.requestLogin(client)
            for headers: HTTPFields in [
                [.authorization: "Bearer \(SecretToken.generate())"], broker.appHeaders, [:],
            ] {
                try await client.execute(uri: "/api/v1/events/\(ticket.event.ID)", method: .get, headers: headers) {
                    #expect([.notFound, .unauthorized].contains($0.status))
                    #expect(!String(buffer: $0.body).contains(ticket.event.ID))
                }
            }
            #expect(try await broker.poll(client, ticket).ID == ticket.event.ID)
        }
    }

    @Test("stale, future, replayed, misdirected and foreign proofs are refused")
    func proofs() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let path = "/api/v1/inbox"
            func inbox(_ headers: HTTPFields) async throws -> (HTTPResponse.Status, String?) {
                try await client.execute(uri: path, method: .get, headers: headers) { ($0.status, errorCode($0)) }
            }
            let fresh = try await alice.device.proofHeaders(.get, path, now: broker.clock.now)
            #expect(try await inbox(fresh).0 == .ok)
            #expect(try await inbox(fresh) == (.unauthorized, "replayed_proof"))
            let stale = try await alice.device.proofHeaders(.get, path, now: broker.clock.now - 61)
            #expect(try await inbox(stale) == (.unauthorized, "invalid_proof"))
            let future = try await alice.device.proofHeaders(.get, path, now: broker.clock.now + 61)
            #expect(try await inbox(future) == (.unauthorized, "invalid_proof"))
            let otherPath = try await alice.device.proofHeaders(.get, "/api/v1/devices/self", now: broker.clock.now)
            #expect(try await inbox(otherPath) == (.unauthorized, "invalid_proof"))
            let otherMethod = try await alice.device.proofHeaders(.post, path, now: broker.clock.now)
            #expect(try await inbox(otherMethod) == (.unauthorized, "invalid_proof"))
            let stranger = try await TestDevice().proofHeaders(.get, path, now: broker.clock.now)
            #expect(try await inbox(stranger) == (.unauthorized, "unknown_device"))
            #expect(try await inbox([HTTPField.Name("Device-Proof")!: "garbage"]) == (.unauthorized, "invalid_proof"))
        }
    }

    @Test("enrollment tokens: single use, bound to the user, expire, and need proof of the key")
    func enrollment() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            func enroll(token: String, user: String, device: TestDevice, signer: TestDevice? = nil) async throws
                -> (HTTPResponse.Status, String?)
            {
                var headers = try await (signer ?? device).proofHeaders(
                    .post, "/api/v1/enrollments", now: broker.clock.now)
                headers[HTTPField.Name("API_KEY_ID")!] = broker.apiKeyID
                let body: [String: AnyEncodable] = [
                    "client_user_id": .init(user), "enrollment_token": .init(token), "public_key": .init(device.jwk),
                    "name": .init("laptop"),
                ]
                return try await client.execute(
                    uri: "/api/v1/enrollments", method: .post, headers: headers, body: json(body)
                ) { ($0.status, errorCode($0)) }
            }
            let token = try await broker.enrollmentToken(client, user: "alice")
            #expect(token.count >= 43, "at least 256 bits, base64url")
            #expect(
                try await enroll(token: token, user: "bob", device: TestDevice()) == (
                    .forbidden, "invalid_enrollment_token"
                ))
            #expect(
                try await enroll(token: token, user: "alice", device: TestDevice(), signer: TestDevice()).0
                    == .unauthorized)
            #expect(try await enroll(token: token, user: "alice", device: TestDevice()).0 == .created)
            #expect(
                try await enroll(token: token, user: "alice", device: TestDevice()) == (
                    .forbidden, "invalid_enrollment_token"
                ))
            let late = try await broker.enrollmentToken(client, user: "alice")
            broker.clock.advance(by: 600)
            #expect(
                try await enroll(token: late, user: "alice", device: TestDevice()) == (
                    .forbidden, "invalid_enrollment_token"
                ))
        }
    }
}
