import Foundation
import HummingbirdCore

/// How many connections the broker holds, and for how long it waits on
/// each. Every waiting connection costs a file descriptor and memory, and
/// anyone can open one: none is held longer than its purpose needs, and
/// none past a number the process's open-file limit can bear.
public struct ConnectionLimits: Sendable, Equatable {
    /// Open connections at most. Past it a new connection is answered 503
    /// and closed.
    public var maximum: Int
    /// Open connections one client address may hold (an IPv6 address counts
    /// with its /64); past it a new one is answered 429 and closed. Trusted
    /// proxies are exempt: their connections carry many clients.
    public var perAddress: Int
    /// How long a request may take to arrive, head and body, from the
    /// connection's start or its first byte: a client that sends a request
    /// slowly, or opens a connection and says nothing, is closed then.
    public var requestReadTimeout: Duration
    /// How long a connection may wait for its next request. Longer than a
    /// proxy's pooled connections idle (nginx closes its own after 60 s), so
    /// the broker does not close one the proxy is about to reuse. A held
    /// long-poll is a request in progress, never idle.
    public var idleTimeout: Duration
    /// How long a response may wait on a client that does not read it.
    public var writeTimeout: Duration

    /// Connections refused with an answer at once, at most; past it a new
    /// connection is closed without one, so that refusing costs no more
    /// descriptors than this.
    public var refusalSlots: Int { max(8, maximum / 64) }

    public static let defaultMaximum = 16_384
    public static let defaultPerAddress = 256

    public init(
        maximum: Int = Self.defaultMaximum, perAddress: Int = Self.defaultPerAddress,
        requestReadTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(75),
        writeTimeout: Duration = .seconds(30)
    ) {
        self.maximum = maximum
        self.perAddress = perAddress
        self.requestReadTimeout = requestReadTimeout
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
    }

    /// How large a request head may be. The broker's requests have heads
    /// of about 1 KB (a device proof is the largest header); Hummingbird's
    /// default of 80 KB would let each slowly sent head take 80 KB for the
    /// read timeout. These are nginx's defaults: 8 KB a line, 32 KB in all.
    /// A larger head is a 400 and the connection closes.
    static let requestHead = HTTP1Channel.Configuration.DecoderConfiguration(
        maxHeaderFieldSize: 8 * 1024, maxHeaderListSize: 32 * 1024, maxHeaderFieldCount: 100)

    /// Descriptors kept for everything but client connections: the
    /// listening socket, event loops, standard streams, the store's files
    /// and connections, and outgoing mail or webhooks.
    public static func reservedDescriptors(databaseConnections: Int) -> Int { 128 + databaseConnections }

    /// The most connections an open-file limit of `descriptors` bears,
    /// with refusals and `reserved` descriptors beside them.
    public static func maximum(underOpenFiles descriptors: Int, reserved: Int) -> Int {
        let available = descriptors - reserved
        // refusalSlots is about 1/64 of the maximum, at least 8.
        return max(1, min(available - 8, available * 64 / 65))
    }

    /// These limits with ``maximum`` lowered to what `descriptors` open
    /// files bear; the original maximum if it fits.
    public func fitted(toOpenFiles descriptors: Int, reserved: Int) -> ConnectionLimits {
        var fitted = self
        fitted.maximum = min(maximum, Self.maximum(underOpenFiles: descriptors, reserved: reserved))
        fitted.perAddress = min(perAddress, fitted.maximum)
        return fitted
    }
}
