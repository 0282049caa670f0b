import CountersignBroker
import CountersignCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// What the approver is shown is refused when it could show anything but
/// itself: each field an app, a requester or a new machine sets.
@Suite("fields the approver reads")
struct DisplayFieldTests {
    static let forged = "Pay 100.00 EUR\u{1B}[2K\rPay 1.00 EUR"

    @Test(
        "an event's details, location, ip and requester name that could forge the approver's screen are refused; nothing is stored"
    )
    func eventFields() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            _ = try await broker.enroll(client)
            let hostile: [[String: AnyEncodable]] = [
                ["details": .init(Self.forged)], ["details": .init("ok\n  event id:  ev_forged")],
                ["details": .init("EUR \u{202E}00.001")], ["details": .init(String(repeating: "x", count: 1025))],
                ["location": .init("Berlin\u{1B}]0;title\u{7}")],
                ["location": .init(String(repeating: "x", count: 40_000))],
                ["ip": .init("not an address")], ["ip": .init("192.0.2.7\u{1B}[31m")],
                ["requester_name": .init("laptop\u{1B}[1A\u{1B}[2K")], ["details": .init("")],
            ]
            for fields in hostile {
                var body = fields
                body["client_user_id"] = .init("alice")
                body["event"] = .init("TRANSACTION")
                try await client.execute(
                    uri: "/api/v1/events", method: .post, headers: broker.backendHeaders, body: json(body)
                ) { response in
                    #expect(response.status == .badRequest, "\(fields.keys): \(String(buffer: response.body))")
                    let message = (try? decode(ErrorDocument.self, response))?.message ?? ""
                    #expect(fields.keys.contains { message.hasPrefix($0) }, "names the field: \(message)")
                }
            }
            // A requester without the secret: its machine name, the same way.
            try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.appHeaders,
                body: json(["client_user_id": "alice", "requester_name": "pc\u{202E}txt.exe"])
            ) { #expect($0.status == .badRequest) }
            try await client.execute(
                uri: "/api/v1/users/alice/events", method: .get, headers: broker.backendHeaders
            ) { response in
                let list = try decode(EventList.self, response)
                #expect(list.events.isEmpty, "nothing was stored")
            }
        }
    }

    @Test("a device's name and type at enrollment are held to the same rule, and a refusal spends no token")
    func deviceNames() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let token = try await broker.enrollmentToken(client, user: "alice")
            func enroll(name: String, type: String) async throws -> HTTPResponse.Status {
                let device = TestDevice()
                var headers = try await device.proofHeaders(.post, "/api/v1/enrollments", now: broker.clock.now)
                headers[HTTPField.Name("API_KEY_ID")!] = broker.apiKeyID
                let body: [String: AnyEncodable] = [
                    "client_user_id": .init("alice"), "enrollment_token": .init(token), "public_key": .init(device.jwk),
                    "name": .init(name), "type": .init(type),
                ]
                return try await client.execute(
                    uri: "/api/v1/enrollments", method: .post, headers: headers, body: json(body)
                ) { $0.status }
            }
            for (name, type) in [
                ("laptop\u{1B}[31m", "cli"), ("laptop", "c\u{2028}li"), (String(repeating: "n", count: 129), "cli"),
            ] {
                #expect(
                    try await enroll(name: name, type: type) == .badRequest,
                    "\(name.debugDescription) \(type.debugDescription)")
            }
            // The refusals did not spend the token.
            #expect(try await enroll(name: "laptop", type: "cli") == .created)
        }
    }
}

private struct EventList: Decodable { let events: [EventDocument] }
