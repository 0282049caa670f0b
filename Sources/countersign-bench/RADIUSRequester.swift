import CountersignClient
import CountersignCore
import Foundation
import NIOCore
import NIOPosix

/// A NAS for the bench: RADIUS logins against the broker's listener, one
/// UDP socket per login. A login is the broker's challenge, the device's
/// approval with the number it showed, and the Accept of the request that
/// carried the State (held until the decision).
struct RADIUSRequester: Sendable {
    let server: SocketAddress
    let secret: RADIUSSecret
    /// The person's address the NAS reports, which the requester limits count by.
    let callingStation: String

    typealias Datagrams = NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>

    /// One login; its duration and the decision-to-Accept time, in seconds.
    /// Fails after a minute without an answer.
    func roundTrip(device: DeviceCredential, approver: CountersignClient) async throws -> (Double, Double) {
        try await withThrowingTaskGroup(of: (Double, Double)?.self) { group in
            group.addTask { try await login(device: device, approver: approver) }
            group.addTask {
                try await Task.sleep(for: .seconds(60))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            guard let first else { throw BenchFailure("no RADIUS answer within a minute") }
            return first
        }
    }

    private func login(device: DeviceCredential, approver: CountersignClient) async throws -> (Double, Double) {
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture { try Datagrams(wrappingChannelSynchronously: channel) }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var answers = inbound.makeAsyncIterator()
            let user = RADIUSAttribute(.userName, text: device.clientUserID)
            let calling = RADIUSAttribute(.callingStationID, text: callingStation)
            /// Sends `request`, again every `every` as a NAS does, and
            /// returns its first authentic answer (a late answer to the
            /// previous request is passed over).
            func exchange(_ request: RADIUSPacket, every: Duration) async throws -> RADIUSPacket {
                let datagram = AddressedEnvelope(remoteAddress: server, data: ByteBuffer(bytes: request.encoded()))
                try await outbound.write(datagram)
                let resend = Task {
                    while !Task.isCancelled {
                        try await Task.sleep(for: every)
                        try await outbound.write(datagram)
                    }
                }
                defer { resend.cancel() }
                while let reply = try await answers.next() {
                    if let answer = try? secret.verifyAnswer(Array(buffer: reply.data), to: request) { return answer }
                }
                throw BenchFailure("the RADIUS socket closed")
            }
            let started = Date()
            let first = secret.request(identifier: 1, attributes: [user, calling], password: [])
            let challenge = try await exchange(first, every: .seconds(3))
            guard challenge.code == .accessChallenge, let stateBytes = challenge.first(.state),
                let state = RADIUSState(stateBytes), let message = challenge.text(.replyMessage),
                let number = message.firstMatch(of: /type (\d+)/)?.1
            else {
                throw BenchFailure(
                    "no challenge with a number: \(challenge.code) \(challenge.text(.replyMessage) ?? "")")
            }
            // The person presses Enter: held until the device decides.
            let second = secret.request(
                identifier: 2, attributes: [user, calling, RADIUSAttribute(.state, stateBytes)], password: [])
            // Longer than the broker's hold: a retransmission only if lost.
            async let accepted = exchange(second, every: .seconds(30))
            var item: InboxItem?
            while item == nil {
                item = try await approver.inbox(device, wait: 25).first { $0.event.ID == state.eventID }
            }
            let decided = try await approver.decide(item!, verdict: .approve, match: String(number), credential: device)
            let answer = try await accepted
            let woken = Date()
            guard answer.code == .accessAccept else {
                throw BenchFailure("answered \(answer.code): \(answer.text(.replyMessage) ?? "")")
            }
            return (woken.timeIntervalSince(started), woken.timeIntervalSince(decided.decidedAt ?? woken))
        }
    }
}
