import CountersignBroker
import CountersignCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@Suite("Client addresses behind a proxy")
struct ForwardedForTests {
    @Test("address ranges match IPv4, IPv6 and IPv4-mapped addresses")
    func networks() throws {
        let private10 = try #require(IPNetwork("10.0.0.0/8"))
        #expect(private10.contains("10.200.3.4") && !private10.contains("11.0.0.1"))
        #expect(private10.contains("::ffff:10.1.2.3"), "IPv4-mapped")
        let single = try #require(IPNetwork("192.0.2.7"))
        #expect(single.contains("192.0.2.7") && !single.contains("192.0.2.8"))
        let ula = try #require(IPNetwork("fd00::/8"))
        #expect(ula.contains("fd12::1") && !ula.contains("fe80::1") && !ula.contains("10.0.0.1"))
        for bad in ["10.0.0.0/33", "nonsense", "10.0.0/8", "::1/129", ""] { #expect(IPNetwork(bad) == nil, "\(bad)") }
    }

    /// The `ip` an event records when created over a real socket from
    /// 127.0.0.1 with these `X-Forwarded-For` values.
    func recordedAddress(trusting proxies: [String], forwardedFor: String?) async throws -> String {
        let broker = try await TestBroker(trustedProxies: proxies.compactMap(IPNetwork.init))
        var logger = Logger(label: "test-broker")
        logger.logLevel = .warning
        let app = Application(router: buildRouter(broker.environment), logger: logger)
        return try await app.test(.live) { client in
            _ = try await broker.enroll(client)
            var headers = broker.appHeaders
            if let forwardedFor { headers[HTTPField.Name("X-Forwarded-For")!] = forwardedFor }
            return try await client.execute(
                uri: "/api/v1/events", method: .post, headers: headers, body: json(["client_user_id": "alice"])
            ) { response in
                #expect(response.status == .created, "\(String(buffer: response.body))")
                return try decode(EventTicket.self, response).event.ip
            }
        }
    }

    @Test("X-Forwarded-For counts only from a trusted proxy, and only its right-most untrusted hop")
    func forwardedFor() async throws {
        #expect(try await recordedAddress(trusting: [], forwardedFor: "203.0.113.5") == "127.0.0.1", "no proxy trusted")
        #expect(
            try await recordedAddress(trusting: ["10.0.0.0/8"], forwardedFor: "203.0.113.5") == "127.0.0.1",
            "the peer is not a trusted proxy")
        #expect(try await recordedAddress(trusting: ["127.0.0.1"], forwardedFor: "203.0.113.5") == "203.0.113.5")
        #expect(
            try await recordedAddress(
                trusting: ["127.0.0.1", "10.0.0.0/8"], forwardedFor: "6.6.6.6, 198.51.100.7, 10.1.1.1")
                == "198.51.100.7", "a client-written hop to the left proves nothing")
        #expect(
            try await recordedAddress(trusting: ["127.0.0.1"], forwardedFor: "203.0.113.5, not-an-address")
                == "127.0.0.1", "a malformed header is ignored")
        #expect(try await recordedAddress(trusting: ["127.0.0.1"], forwardedFor: nil) == "127.0.0.1")
    }
}
