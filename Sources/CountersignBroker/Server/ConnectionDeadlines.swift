import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Closes a connection that makes the broker wait for nothing: a request
/// that does not arrive in time (silent connections, slowloris heads and
/// bodies), a connection idle for too long between requests, or a client
/// that stops reading its responses.
///
/// While a request is answered (a long-poll held among them) nothing is
/// timed: the handler bounds its own hold.
///
/// One timer per connection at most, moved lazily: a state change only
/// writes the new deadline, and the timer, when it fires early, sleeps
/// again until it. A round trip thus schedules no timer of its own.
final class ConnectionDeadlines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let limits: ConnectionLimits
    /// Heads read, requests read to their end, responses written to their end.
    private var started = 0
    private var read = 0
    private var answered = 0
    private var deadline: NIODeadline?
    private var timer: Scheduled<Void>?
    /// When ``timer`` fires.
    private var scheduled: NIODeadline?
    private var writeTimer: Scheduled<Void>?

    init(limits: ConnectionLimits) {
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        writeTimer?.cancel()
        timer = nil
        scheduled = nil
        writeTimer = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        handlerRemoved(context: context)
        context.fireChannelInactive()
    }

    /// A new connection must bring its first request in time.
    private func start(_ context: ChannelHandlerContext) {
        guard deadline == nil, timer == nil else { return }
        set(context.eventLoop.now + TimeAmount(limits.requestReadTimeout), context)
    }

    /// Waiting for a request: every request read is answered.
    private var isIdle: Bool { started == read && read == answered }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            // A request that begins while idle has the read timeout to arrive.
            if isIdle { beginRequest(context) }
            started += 1
        case .body: break
        case .end:
            read += 1
            if started == read {
                // Answering, untimed; or answered already (a refusal written
                // before the body was read): idle from now.
                if read == answered {
                    set(context.eventLoop.now + TimeAmount(limits.idleTimeout), context)
                } else {
                    deadline = nil
                }
            }
        }
        context.fireChannelRead(data)
    }

    /// Bytes arrived, whether or not they completed a part: while idle,
    /// the first ones of a request (a head sent slowly) start its clock.
    func channelReadComplete(context: ChannelHandlerContext) {
        if isIdle { beginRequest(context) }
        context.fireChannelReadComplete()
    }

    /// The request read timeout from now, unless an earlier deadline runs.
    private func beginRequest(_ context: ChannelHandlerContext) {
        let due = context.eventLoop.now + TimeAmount(limits.requestReadTimeout)
        if deadline.map({ $0 > due }) ?? true { set(due, context) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            answered += 1
            if answered == read {
                let now = context.eventLoop.now
                // A pipelined request whose head came is being read: its
                // timeout; otherwise idle until the next one.
                set(now + TimeAmount(started > read ? limits.requestReadTimeout : limits.idleTimeout), context)
            }
        }
        context.write(data, promise: promise)
    }

    /// A client that stops reading fills the socket's buffers; if it does
    /// not drain them in time, it is closed.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            writeTimer?.cancel()
            writeTimer = nil
        } else if writeTimer == nil {
            writeTimer = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(
                in: TimeAmount(limits.writeTimeout)
            ) {
                context.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    /// Moves the deadline; the timer follows when it next fires.
    private func set(_ newDeadline: NIODeadline, _ context: ChannelHandlerContext) {
        deadline = newDeadline
        // A timer due before the new deadline sleeps again when it fires.
        if let scheduled, scheduled <= newDeadline { return }
        timer?.cancel()
        schedule(at: newDeadline, context)
    }

    private func schedule(at when: NIODeadline, _ context: ChannelHandlerContext) {
        scheduled = when
        timer = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(deadline: when) {
            self.fired(context)
        }
    }

    private func fired(_ context: ChannelHandlerContext) {
        timer = nil
        scheduled = nil
        guard let deadline else { return }
        if deadline <= context.eventLoop.now {
            context.close(promise: nil)
        } else {
            schedule(at: deadline, context)
        }
    }
}
