import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Testing

@testable import CountersignBroker

@Suite("connection loop")
struct ConnectionLoopTests {
    func head(_ path: String) -> HTTPRequestPart {
        .head(HTTPRequest(method: .post, scheme: nil, authority: "t", path: path))
    }

    @Test("a body is read once up to its end; the next head comes after whatever of a body was left unread")
    func parts() async throws {
        let (stream, source) = NIOAsyncChannelInboundStream<HTTPRequestPart>.makeTestingStream()
        for part: HTTPRequestPart in [
            head("/a"), .body(ByteBuffer(string: "ab")), .body(ByteBuffer(string: "cd")), .end(nil),
            head("/b"), .body(ByteBuffer(string: "never read")), .end(nil),
            head("/c"), .end(nil),
        ] {
            source.yield(part)
        }
        source.finish()
        let parts = RequestParts(stream.makeAsyncIterator())

        #expect(try await parts.nextHead()?.path == "/a")
        let body = parts.body()
        var read = ""
        for try await buffer in body { read += String(buffer: buffer) }
        #expect(read == "abcd")
        var again = 0
        for try await _ in body { again += 1 }
        #expect(again == 0, "a second reading of the body reads nothing, not the next request")

        #expect(try await parts.nextHead()?.path == "/b")
        #expect(try await parts.nextHead()?.path == "/c")
        #expect(try await parts.nextHead() == nil)
    }
}
