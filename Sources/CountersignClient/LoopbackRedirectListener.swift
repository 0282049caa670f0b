import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// Listens on 127.0.0.1, on a free port, for the browser's redirect back
/// from the hosted verification page (RFC 8252 §7.3, loopback redirection).
public final class LoopbackRedirectListener: Sendable {
    /// The port the system chose.
    public let port: Int
    /// The redirect URL to register and send: `http://127.0.0.1:PORT/callback`.
    public var redirectURL: String { "http://127.0.0.1:\(port)/callback" }
    private let channel: any Channel
    private let stream: AsyncStream<[String: String]>

    private init(port: Int, channel: any Channel, stream: AsyncStream<[String: String]>) {
        self.port = port
        self.channel = channel
        self.stream = stream
    }

    /// Starts listening.
    public static func start() async throws -> LoopbackRedirectListener {
        let (stream, continuation) = AsyncStream<[String: String]>.makeStream()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.configureHTTPServerPipeline()
                    try child.pipeline.syncOperations.addHandler(CallbackHandler(continuation: continuation))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else {
            throw CountersignError(status: 0, code: "listen", message: "no port")
        }
        return LoopbackRedirectListener(port: port, channel: channel, stream: stream)
    }

    /// The query parameters of the first request to `/callback`, or nil
    /// after `timeout`.
    public func callback(timeout: Duration) async -> [String: String]? {
        await withTaskGroup(of: [String: String]?.self) { group in
            group.addTask { [stream] in
                for await query in stream { return query }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Stops listening.
    public func close() async {
        try? await channel.close()
    }
}

/// Answers `/callback` with a page telling the user to go back to the
/// terminal, and hands its query to the listener.
private final class CallbackHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let continuation: AsyncStream<[String: String]>.Continuation
    var isCallback = false

    init(continuation: AsyncStream<[String: String]>.Continuation) {
        self.continuation = continuation
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            let components = URLComponents(string: head.uri)
            isCallback = components?.path == "/callback"
            if isCallback {
                var query: [String: String] = [:]
                for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
                continuation.yield(query)
            }
        case .body:
            break
        case .end:
            let text =
                isCallback
                ? "<!doctype html><title>Countersign</title><p>Done. You can close this window and go back to the terminal.</p>"
                : "Not found"
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
            headers.add(name: "Content-Length", value: String(text.utf8.count))
            headers.add(name: "Connection", value: "close")
            let head = HTTPResponseHead(version: .http1_1, status: isCallback ? .ok : .notFound, headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
        }
    }
}
