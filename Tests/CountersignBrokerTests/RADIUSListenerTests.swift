import CountersignCore
import Foundation
import Testing

@testable import CountersignBroker

@Suite("RADIUS listener: the retransmission cache, the amplification bound, the client by address")
struct RADIUSListenerTests {
    @Test("a request in progress or answered within 30 s is a retransmission; later, or forgotten, it is new")
    func retransmissions() {
        let cache = RADIUSRetransmissions()
        let start = ContinuousClock.now
        let key = RADIUSRetransmissions.Key(
            source: "192.0.2.10", port: 50000, code: 1, identifier: 7, authenticator: Array(repeating: 1, count: 16))
        let other = RADIUSRetransmissions.Key(
            source: "192.0.2.10", port: 50000, code: 1, identifier: 7, authenticator: Array(repeating: 2, count: 16))
        let status = RADIUSRetransmissions.Key(
            source: "192.0.2.10", port: 50000, code: 12, identifier: 7, authenticator: Array(repeating: 1, count: 16))
        #expect(cache.begin(key, now: start) == .new)
        #expect(cache.begin(key, now: start + .seconds(3)) == .inProgress, "held for a decision: nothing new")
        #expect(cache.begin(other, now: start + .seconds(3)) == .new, "another authenticator is another request")
        cache.finish(key, answer: [2, 7], now: start + .seconds(5))
        #expect(cache.begin(key, now: start + .seconds(34)) == .answered([2, 7]))
        #expect(cache.begin(status, now: start + .seconds(34)) == .new, "another code is another request")
        #expect(cache.begin(key, now: start + .seconds(35)) == .new, "kept 30 s after its answer")
        cache.forget(key)
        #expect(cache.begin(key, now: start + .seconds(36)) == .new, "no answer: a retransmission is tried afresh")

        // Answers older than 30 s go within seconds, full or not.
        let flood = RADIUSRetransmissions()
        for index in 0..<1000 {
            let packet = RADIUSRetransmissions.Key(
                source: "192.0.2.10", port: index, code: 1, identifier: 1, authenticator: [])
            _ = flood.begin(packet, now: start)
            flood.finish(packet, answer: [2], now: start)
        }
        _ = flood.begin(key, now: start + .seconds(40))
        #expect(flood.count == 1, "only the new one is kept")
    }

    @Test("an answer larger than four times its request loses Reply-Message text, at a character's start")
    func amplification() throws {
        let request = RADIUSPacket(
            code: .accessRequest, identifier: 1, authenticator: Array(repeating: 0, count: 16),
            attributes: [RADIUSAttribute(.userName, text: "a")])
        let length = request.encoded().count
        let state = RADIUSAttribute(.state, Array(repeating: 0x41, count: 40))
        let message = RADIUSAttribute(.replyMessage, text: String(repeating: "é", count: 100))
        let fitted = RADIUSAmplification.fitted([message, state], answering: request, of: length)
        let size = RADIUSPacket.headerLength + 18 + fitted.reduce(0) { $0 + 2 + $1.value.count }
        #expect(size <= 4 * length, "\(size) of \(length)")
        let text = try #require(fitted.first { $0.type == RADIUSAttribute.Kind.replyMessage.rawValue })
        #expect(String(validating: text.value, as: UTF8.self) != nil, "whole characters")
        #expect(fitted.contains(state), "the State is never cut")
        let small = RADIUSAttribute(.replyMessage, text: "ok")
        #expect(RADIUSAmplification.fitted([small], answering: request, of: length) == [small])
    }
}
