import CountersignClient
import CountersignCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// The SDK's request timeout against a real HTTP server that sends an
/// answer's head and then stalls its body, as a broken proxy may.
@Suite("client: an answer whose body stalls")
struct ClientDeadlineTests {
    @Test("the timeout covers the body: the call fails within it, saying no answer came")
    func stalledBody() async throws {
        // Holds the stalled answer open until the test has its result.
        let (released, release) = AsyncStream<Void>.makeStream()
        let router = Router()
        router.get("healthz") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "application/json", .contentLength: "64"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "{\"status\":"))
                    for await _ in released {}
                    try await writer.write(ByteBuffer(string: String(repeating: " ", count: 54)))
                    try await writer.finish(nil)
                })
        }
        var logger = Logger(label: "stalling")
        logger.logLevel = .critical
        let app = Application(router: router, logger: logger)
        try await app.test(.live) { client in
            let url = "http://127.0.0.1:\(client.port!)"
            // Bounded by the test too: without the fix the call would wait
            // for the body for ever, so after 60 s the server sends the rest.
            let outcome = await withTaskGroup(of: Result<Bool, any Error>?.self) { group in
                group.addTask { await Result { try await BrokerConnection(baseURL: url).health() } }
                group.addTask {
                    try? await Task.sleep(for: .seconds(60))
                    release.finish()
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
            release.finish()
            // health() allows 5 s; a busy machine gets a generous margin.
            let result = try #require(outcome, "the call did not end within 60 s")
            #expect(throws: CountersignError.self) { try result.get() }
            if case .failure(let error as CountersignError) = result {
                #expect(error.code == "unreachable" && error.message.contains("no answer within 5 s"), "\(error)")
            }
        }
    }
}
