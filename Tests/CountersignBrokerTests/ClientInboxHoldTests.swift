import CountersignClient
import CountersignCore
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

/// ``InboxWatcher`` asks for the hold its broker says it gives, against a
/// real HTTP server that answers inbox polls as a broker would and keeps
/// the `wait` each one asked for.
@Suite("client: the inbox watcher's hold")
struct ClientInboxHoldTests {
    /// The `wait` of the watcher's first two polls, against a broker whose
    /// answers say `hold` (nothing, for nil).
    func waits(brokerHold: Int?, longestHold: Int? = nil) async throws -> [Int] {
        let asked = Mutex([Int]())
        let answer = #"{"events":[],"state":"AAAAAAAAAAAAAAA""# + (brokerHold.map { #","hold":\#($0)"# } ?? "") + "}"
        let router = Router()
        router.get("api/v1/inbox") { request, _ -> Response in
            let wait = request.uri.queryParameters["wait"].flatMap { Int(String($0)) } ?? -1
            asked.withLock { $0.append(wait) }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: answer)))
        }
        var logger = Logger(label: "broker")
        logger.logLevel = .warning
        return try await Application(router: router, logger: logger).test(.live) { client in
            let broker = "http://127.0.0.1:\(client.port!)"
            let device = DeviceCredential(
                broker: broker, apiKeyID: "ck_app", clientUserID: "alice", privateKey: P256.Signing.PrivateKey(),
                name: "laptop")
            let watcher = InboxWatcher(
                client: CountersignClient(for: device), credential: device, longestHold: longestHold)
            for try await change in watcher.changes() {
                guard case .pending = change else { continue }
                var patience = 600
                while asked.withLock({ $0.count }) < 2, patience > 0 {
                    try await Task.sleep(for: .milliseconds(100))
                    patience -= 1
                }
                break
            }
            return asked.withLock { Array($0.prefix(2)) }
        }
    }

    @Test("it asks for the broker's hold less 5 s, within its own bound; 25 s of a broker that does not say")
    func holds() async throws {
        #expect(try await waits(brokerHold: 30) == [0, 25], "the default --max-wait: as before")
        #expect(try await waits(brokerHold: 300) == [0, 295], "a broker that holds five minutes")
        #expect(try await waits(brokerHold: 300, longestHold: 60) == [0, 60], "the caller's bound")
        #expect(try await waits(brokerHold: 8) == [0, 8], "a short hold, kept whole")
        #expect(try await waits(brokerHold: nil) == [0, 25], "an older broker")
    }
}
