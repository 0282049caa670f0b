import CountersignCore
import Foundation
import Logging
import NIOCore
import NIOPosix

/// Asks a client's upstream RADIUS server (FreeRADIUS, NPS, a directory's)
/// whether the password typed at the NAS is right, the broker acting as
/// its NAS: only then is the login asked of a trusted device.
struct RADIUSUpstream {
    let upstream: RADIUSClient.Upstream
    let logger: Logger

    /// Tries sent, each waited for this long: within the hold a NAS gives
    /// the broker.
    static let attempts = 2
    static let timeout: Duration = .seconds(3)

    enum Verdict: Equatable {
        case accepted
        /// Refused, with the upstream's Reply-Message if it gave one.
        case rejected(String?)
        /// No authentic answer in time: the NAS is not answered either, and
        /// asks again.
        case unreachable
    }

    /// The upstream's verdict on `password` for the user of `original`,
    /// whose NAS attributes (address, port, caller) it is told too.
    func check(_ original: RADIUSPacket, password: [UInt8]) async -> Verdict {
        guard let address = RADIUSAddress(upstream.address) else {
            logger.error(
                "the RADIUS upstream's address is not HOST:PORT", metadata: ["upstream": "\(upstream.address)"])
            return .unreachable
        }
        let forwarded: [RADIUSAttribute.Kind] = [
            .userName, .nasIPAddress, .nasPort, .calledStationID, .callingStationID, .nasIdentifier, .nasIPv6Address,
        ]
        let secret = RADIUSSecret(upstream.secret)
        let request = secret.request(
            identifier: UInt8.random(in: .min ... .max),
            attributes: original.attributes.filter { attribute in
                forwarded.contains { $0.rawValue == attribute.type }
            }, password: password)
        do {
            let target = try SocketAddress(ipAddress: address.host, port: address.port)
            guard let answer = try await exchange(request.encoded(), with: target, secret: secret, request: request)
            else {
                logger.warning("the RADIUS upstream did not answer", metadata: ["upstream": "\(upstream.address)"])
                return .unreachable
            }
            switch answer.code {
            case .accessAccept: return .accepted
            case .accessReject: return .rejected(answer.text(.replyMessage))
            default:
                // A challenge of its own (an OTP of its own): not taken.
                logger.warning(
                    "the RADIUS upstream answered \(answer.code), which the broker does not relay",
                    metadata: ["upstream": "\(upstream.address)"])
                return .rejected(nil)
            }
        } catch {
            logger.warning(
                "the RADIUS upstream cannot be asked",
                metadata: ["upstream": "\(upstream.address)", "error": "\(error)"])
            return .unreachable
        }
    }

    /// Sends `datagram` from a socket of its own, again after each
    /// ``timeout``, and returns the first authentic answer; nil after the
    /// last try. Answers that are not authentic (another server, a forger)
    /// are ignored.
    private func exchange(
        _ datagram: [UInt8], with target: SocketAddress, secret: RADIUSSecret, request: RADIUSPacket
    ) async throws -> RADIUSPacket? {
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.recvAllocator, value: RADIUSServer.receiveBuffers)
            .bind(host: target.protocol == .inet6 ? "::" : "0.0.0.0", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try RADIUSServer.Datagrams(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: RADIUSPacket?.self) { group in
                group.addTask {
                    for try await envelope in inbound where envelope.remoteAddress == target {
                        if let answer = try? secret.verifyAnswer(
                            Array(buffer: envelope.data), to: request,
                            requiring: upstream.requireMessageAuthenticator)
                        {
                            return answer
                        }
                    }
                    return nil
                }
                group.addTask {
                    for _ in 0..<Self.attempts {
                        try await outbound.write(
                            AddressedEnvelope(remoteAddress: target, data: ByteBuffer(bytes: datagram)))
                        try await Task.sleep(for: Self.timeout)
                    }
                    return nil
                }
                let first = try await group.next() ?? nil
                group.cancelAll()
                return first
            }
        }
    }
}
