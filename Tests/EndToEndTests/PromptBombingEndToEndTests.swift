import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Prompt bombing with only the API key id (it ships inside apps), from
/// client addresses a trusted proxy names: a real broker behind
/// `--trusted-proxy 127.0.0.1`.
@Suite("end to end: prompt bombing")
struct PromptBombingEndToEndTests {
    /// A requester's login for `user`, from `address` (as the proxy says); the status and error code.
    func requestLogin(_ broker: LiveBroker, user: String, from address: String) async throws -> (Int, String?) {
        var request = HTTPClientRequest(url: broker.url + "/api/v1/events")
        request.method = .POST
        request.headers.add(name: "API_KEY_ID", value: broker.apiKeyID)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "X-Forwarded-For", value: address)
        request.body = .bytes(ByteBuffer(string: #"{"client_user_id":"\#(user)","requester_name":"pc"}"#))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 16)
        let error = (try? JSONDecoder().decode([String: String].self, from: Data(body.readableBytesView)))?["error"]
        return (Int(response.status.code), error)
    }

    @Test(
        "an attacker with the key id fills its share of a user's prompts; the backend and the user's own login still get through, and one address cannot prompt many users"
    )
    func bombing() async throws {
        // A window longer than the test, however busy the machine: the caps
        // count pending requests, and one that expired would free a place
        // (a loaded run took 130 s, past the default minute).
        let broker = try await LiveBroker.start(arguments: ["--trusted-proxy", "127.0.0.1", "--approval-window", "10m"])
        defer { broker.stop() }
        _ = try await broker.enrollDevice()

        let attacker = "203.0.113.9"
        for _ in 0..<3 { #expect(try await requestLogin(broker, user: "alice", from: attacker).0 == 201) }
        #expect(try await requestLogin(broker, user: "alice", from: attacker) == (429, "too_many_pending"))
        // The app backend's own request, with its secret.
        let transaction = try await broker.backend.requestApproval(user: "alice", details: "pay 10 EUR")
        #expect(transaction.event.status == .pending)
        // alice's own login from her new machine.
        #expect(try await requestLogin(broker, user: "alice", from: "198.51.100.7").0 == 201)

        // One address, many users (enrolled or not, alike): 10 in all, then 429; another address goes on.
        for index in 0..<7 { #expect(try await requestLogin(broker, user: "user-\(index)", from: attacker).0 == 201) }
        #expect(try await requestLogin(broker, user: "user-7", from: attacker) == (429, "too_many_pending"))
        #expect(try await requestLogin(broker, user: "user-7", from: "192.0.2.44").0 == 201)
    }
}
