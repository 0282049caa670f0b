import AsyncHTTPClient
import CountersignBroker
import CountersignCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
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
    /// 127.0.0.1 with these `X-Forwarded-For` values. The device is enrolled
    /// in memory; only the event is created over the socket, by a client that
    /// waits as long as a loaded machine needs (the live test client gives up
    /// after 20 s without a byte).
    func recordedAddress(trusting proxies: [String], forwardedFor: String?) async throws -> String {
        let broker = try await TestBroker(trustedProxies: proxies.compactMap(IPNetwork.init))
        var logger = Logger(label: "test-broker")
        logger.logLevel = .warning
        let app = Application(router: buildRouter(broker.environment), logger: logger)
        try await app.test(.router) { client in _ = try await broker.enroll(client) }
        return try await app.test(.live) { client in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(client.port!)/api/v1/events")
            request.method = .POST
            for field in broker.appHeaders { request.headers.add(name: field.name.rawName, value: field.value) }
            if let forwardedFor { request.headers.add(name: "X-Forwarded-For", value: forwardedFor) }
            request.body = .bytes(Data(#"{"client_user_id":"alice"}"#.utf8))
            // Its own client, patient to connect too: on a loaded machine the
            // shared one's connect timeout ran out before the server accepted.
            var configuration = HTTPClient.Configuration()
            configuration.timeout = .init(connect: .minutes(2), read: .minutes(5))
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            let answer = await Result {
                let response = try await http.execute(request, timeout: .minutes(5))
                return (response.status, try await response.body.collect(upTo: 1 << 20))
            }
            try await http.shutdown()
            let (status, body) = try answer.get()
            #expect(status == .created, "\(String(buffer: body))")
            return try WireCoding.decoder().decode(EventTicket.self, from: Data(body.readableBytesView)).event.ip
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
                == "127.0.0.1", "a malformed hop where the client's should be: the header is ignored")
        // A proxy that appends to what the client sent: the client's own
        // junk to the left of its address cannot make it count as the proxy.
        #expect(
            try await recordedAddress(trusting: ["127.0.0.1"], forwardedFor: "junk, 203.0.113.5") == "203.0.113.5",
            "a client-written malformed hop to the left is not read")
        #expect(
            try await recordedAddress(trusting: ["127.0.0.1", "10.0.0.0/8"], forwardedFor: "::1/x, 10.1.1.1, 10.2.2.2")
                == "127.0.0.1", "every hop after the junk a proxy: the junk is the client's, no address")
        #expect(try await recordedAddress(trusting: ["127.0.0.1"], forwardedFor: nil) == "127.0.0.1")
    }
}
