import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// TCP keep-alive on every accepted connection: after ``idle`` seconds with
/// nothing sent either way, a probe every ``interval`` seconds, and the
/// connection closed after ``count`` of them go unanswered.
///
/// A held long-poll sends nothing for up to `--max-wait`. Home routers,
/// carrier NATs and firewalls forget a connection idle for a minute or a
/// few, after which the wake-up the broker writes never reaches the device,
/// which goes on waiting for its answer. The probes are traffic that keeps
/// them remembering it; and a device that vanished (its power cut, its
/// network gone) is found within about a minute instead of at the end of
/// its hold.
enum TCPKeepAlive {
    static let idle: Int32 = 30
    static let interval: Int32 = 10
    static let count: Int32 = 3

    /// Turns it on for `channel`, on its event loop.
    static func enable(on channel: any Channel) throws {
        guard let options = channel.syncOptions else { return }
        try options.setOption(ChannelOptions.socketOption(.so_keepalive), value: 1)
        #if os(Linux)
            for (name, value) in [(TCP_KEEPIDLE, idle), (TCP_KEEPINTVL, interval), (TCP_KEEPCNT, count)] {
                try options.setOption(
                    ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: name)),
                    value: SocketOptionValue(value))
            }
        #endif
    }
}
