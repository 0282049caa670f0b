import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import Synchronization

/// Hummingbird's HTTP/1.1 child channel (its pipeline, codecs and
/// handlers), with a request loop that lets go of each request once it is
/// answered.
///
/// Hummingbird's own loop keeps the first request's head (every header of
/// it) for as long as the connection lives, next to the head of the request
/// in progress. For a long-poll that is about 1.1 KB more per held
/// connection from its second poll on: 11 MB for 10,000 devices. Here a
/// request, its head and its body live for one turn of the loop.
///
/// A GET (a long-poll among them) runs on the connection's task; any other
/// request runs in a child task. A task keeps every slab of memory its
/// async call chain ever needed until it ends, so a connection that had
/// created an event or sent a decision (deeper chains) and then held a poll
/// kept their memory too: behind a proxy, or with a client that reuses its
/// connections for everything, 10,000 held polls grew from 280 to 368 MB in
/// a minute. With the writes in tasks of their own they stay at 282 MB.
///
/// Each connection is counted when it opens (``ConnectionCounter``): one
/// past the limits is answered 503 or 429 and closed.
struct BrokerHTTP1Channel: ServerChildChannel {
    /// An accepted connection, and whether it is served.
    struct Value: ServerChildChannelValue {
        let asyncChannel: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>
        let admission: ConnectionCounter.Admission
        var channel: any Channel { asyncChannel.channel }
    }

    let http1: HTTP1Channel
    let counter: ConnectionCounter

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let address = channel.remoteAddress
        // Best effort: a socket that refuses the options is served without.
        try? TCPKeepAlive.enable(on: channel)
        let admission = counter.admit(from: address)
        channel.closeFuture.whenComplete { [counter] _ in counter.release(admission, from: address) }
        return http1.setup(channel: channel, logger: logger).flatMapThrowing { asyncChannel in
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(
                HostFieldCheck(), position: .before(try pipeline.handler(type: HTTP1ToHTTPServerCodec.self)))
            return Value(asyncChannel: asyncChannel, admission: admission)
        }
    }

    func handle(value: Value, logger: Logger) async {
        switch value.admission {
        case .admitted: await serve(value.asyncChannel, logger: logger)
        case .refused(let refusal): await refuse(value.asyncChannel, refusal, logger: logger)
        case .dropped: try? await value.channel.close()
        }
    }

    private func serve(_ channel: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, logger: Logger) async {
        do {
            try await withTaskCancellationHandler {
                try await channel.executeThenClose { inbound, outbound in
                    try await serve(
                        RequestParts(inbound.makeAsyncIterator()), outbound, on: channel.channel, logger: logger)
                    outbound.finish()
                    try await channel.channel.closeFuture.get()
                }
            } onCancel: {
                channel.channel.close(mode: .input, promise: nil)
            }
        } catch {
            logger.trace("Failed to read/write to Channel. Error: \(error)")
        }
    }

    /// Answers the connection's requests in turn, until it ends or asks to
    /// be closed. A request the parser cannot read, or whose Host field is
    /// missing or repeated (``HostFieldCheck``), gets a 400 and the
    /// connection closes.
    private func serve(
        _ parts: RequestParts, _ outbound: NIOAsyncChannelOutboundWriter<HTTPResponsePart>, on channel: any Channel,
        logger: Logger
    ) async throws {
        do {
            while let head = try await parts.nextHead() {
                let request = Request(head: head, body: RequestBody(asyncSequence: parts.body()))
                if head.method == .get {
                    try await http1.responder(request, ResponseWriter(outbound: outbound), channel)
                } else {
                    try await respondApart(to: request, outbound, on: channel)
                }
                if request.headers[.connection] == "close" { return }
            }
        } catch let error where error is HTTPParserError || error is HostFieldCheck.Refusal {
            logger.debug("HTTP parse error, closing connection")
            try await outbound.write(
                .head(.init(status: .badRequest, headerFields: [.connection: "close", .contentLength: "0"])))
            try await outbound.write(.end(nil))
        }
    }
}

extension BrokerHTTP1Channel {
    /// Answers one request in a task of its own, whose memory goes with it
    /// when it ends.
    fileprivate func respondApart(
        to request: Request, _ outbound: NIOAsyncChannelOutboundWriter<HTTPResponsePart>, on channel: any Channel
    ) async throws {
        let responder = http1.responder
        async let answered: Void = responder(request, ResponseWriter(outbound: outbound), channel)
        try await answered
    }
}

/// The parts of a connection's requests, read by the loop (heads) and by
/// each request's body in turn. Copies of the iterator share its position.
final class RequestParts: @unchecked Sendable {
    // Only ever used by the connection's task, one reader at a time: the
    // loop waits while the responder reads the body.
    private let iterator: NIOAsyncChannelInboundStream<HTTPRequestPart>.AsyncIterator

    init(_ iterator: NIOAsyncChannelInboundStream<HTTPRequestPart>.AsyncIterator) {
        self.iterator = iterator
    }

    /// The next request's head, past whatever of the last body its
    /// responder left unread; nil when the connection has no more.
    func nextHead() async throws -> HTTPRequest? {
        var iterator = self.iterator
        while let part = try await iterator.next() {
            if case .head(let head) = part { return head }
        }
        return nil
    }

    /// The body of the request whose head was read last.
    func body() -> Body { Body(parts: self, taken: Body.Taken()) }

    /// Read once: a second iterator reads nothing, not the next request.
    struct Body: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let parts: RequestParts
        let taken: Taken

        final class Taken: Sendable {
            let flag = Atomic<Bool>(false)
        }

        func makeAsyncIterator() -> Iterator {
            let first = taken.flag.exchange(true, ordering: .relaxed) == false
            return Iterator(iterator: parts.iterator, done: !first)
        }

        struct Iterator: AsyncIteratorProtocol {
            var iterator: NIOAsyncChannelInboundStream<HTTPRequestPart>.AsyncIterator
            var done = false

            mutating func next() async throws -> ByteBuffer? {
                guard !done, let part = try await iterator.next() else { return nil }
                switch part {
                case .body(let buffer): return buffer
                case .end: done = true
                case .head: throw HTTPParserError.invalidInternalState
                }
                return nil
            }
        }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 with receive buffers sized by ``ReceiveBufferSizer``,
    /// connections counted and refused past their limits
    /// (``ConnectionCounter``) and timed while they make the broker wait
    /// (``ConnectionDeadlines``), and requests let go of once answered
    /// (``BrokerHTTP1Channel``).
    static func brokerHTTP1(_ counter: ConnectionCounter) -> HTTPServerBuilder {
        let limits = counter.limits
        return HTTPServerBuilder { responder in
            BrokerHTTP1Channel(
                http1: HTTP1Channel(
                    responder: responder,
                    configuration: .init(
                        additionalChannelHandlers: [ReceiveBufferSizer(), ConnectionDeadlines(limits: limits)],
                        httpDecoderConfiguration: ConnectionLimits.requestHead)),
                counter: counter)
        }
    }
}
