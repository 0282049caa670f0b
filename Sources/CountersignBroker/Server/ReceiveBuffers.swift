import HummingbirdCore
import NIOCore

/// Sizes a connection's receive buffer for the broker's requests, then
/// leaves the pipeline.
///
/// NIO keeps each connection's last receive buffer for the next read, sized
/// 2 KB at first. The broker's requests are headers and a small JSON body,
/// about 1 KB, and most connections are long-polls that read one request
/// and wait: starting at 1 KB keeps 1 KB less per held connection. A larger
/// request takes a second read, and the buffer grows for that connection
/// (up to 64 KB, the largest body).
final class ReceiveBufferSizer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Never

    static let allocator = AdaptiveRecvByteBufferAllocator(minimum: 256, initial: 1024, maximum: 64 * 1024)

    func handlerAdded(context: ChannelHandlerContext) {
        try? context.channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: Self.allocator)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
