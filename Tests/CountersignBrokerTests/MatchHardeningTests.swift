import CountersignBroker
import CountersignCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// After several rejections in a short time, a guess at the match number
/// must be 1 in 900,000, not 1 in 90.
@Suite("number matching hardens after rejections")
struct MatchHardeningTests {
    @Test("three rejections in ten minutes: the next number has 6 digits, the inbox says so; later, 2 again")
    func hardens() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            for _ in 0..<MatchNumberRule.hardenAfter {
                let login = try await broker.requestLogin(client)
                #expect(login.matchNumber?.count == 2)
                let item = try #require(
                    try await broker.inbox(client, alice.device).first { $0.event.ID == login.event.ID })
                #expect(item.matchDigits == 2)
                let rejection = try await alice.device.decision(on: item, .reject, match: nil, now: broker.clock.now)
                #expect(try await broker.submit(client, eventID: login.event.ID, decision: rejection).status == .ok)
            }
            let hardened = try await broker.requestLogin(client)
            let number = try #require(hardened.matchNumber)
            #expect(number.count == 6 && number.first != "0", "\(number)")
            let item = try #require(
                try await broker.inbox(client, alice.device).first { $0.event.ID == hardened.event.ID })
            #expect(item.matchDigits == 6)
            // The first two digits alone are a wrong number.
            let short = try await alice.device.decision(
                on: item, .approve, match: String(number.prefix(2)), now: broker.clock.now)
            let refused = try await broker.submit(client, eventID: hardened.event.ID, decision: short)
            #expect(refused.status == .unprocessableContent && errorCode(refused) == "wrong_match")
            let approval = try await alice.device.decision(on: item, .approve, match: number, now: broker.clock.now)
            #expect(try await broker.submit(client, eventID: hardened.event.ID, decision: approval).status == .ok)

            // The rejections age out of the window.
            broker.clock.advance(by: MatchNumberRule.window + 1)
            #expect(try await broker.requestLogin(client).matchNumber?.count == 2)
        }
    }
}
