import NIOCore
import NIOHTTP1

/// RFC 9112 §3.2: a server answers 400 to an HTTP/1.1 request without a
/// Host field, and to any request with more than one. The check sits ahead
/// of the conversion to HTTP types, which forgets the request's version
/// (an HTTP/1.0 request may leave Host out) and keeps only the first Host.
/// A refused head reaches the connection's loop as an error, after
/// the requests before it: they are answered in order, then the 400, and
/// the connection closes. Nothing after it is read.
final class HostFieldCheck: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    /// What the connection's loop answers with a 400, as a parse error.
    struct Refusal: Error {}

    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        if case .head(let head) = unwrapInboundIn(data) {
            let hosts = head.headers["Host"].count
            if hosts > 1 || (hosts == 0 && (head.version.major, head.version.minor) >= (1, 1)) {
                refused = true
                context.fireErrorCaught(Refusal())
                return
            }
        }
        context.fireChannelRead(data)
    }
}
