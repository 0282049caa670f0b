import Testing

@testable import CountersignBroker

@Suite struct WakeHubTests {
    @Test func aNotificationBeforeTheWaitIsKeptForIt() async {
        let hub = WakeHub()
        let subscription = hub.subscribe(["event:a"])
        hub.notify("event:a")
        let started = ContinuousClock.now
        #expect(await subscription.wait(timeout: .seconds(20)) != nil)
        #expect(ContinuousClock.now - started < .seconds(5))
        // Kept once: the next wait runs to its timeout.
        #expect(await subscription.wait(timeout: .milliseconds(50)) == nil)
    }

    @Test func aParkedWaiterWakesOnItsKeyOnly() async throws {
        let hub = WakeHub()
        let waiter = hub.subscribe(["inbox:u1", "event:b"])
        let bystander = hub.subscribe(["inbox:u2"])
        let woken = Task { await waiter.wait(timeout: .seconds(20)) }
        let untouched = Task { await bystander.wait(timeout: .milliseconds(300)) }
        try await Task.sleep(for: .milliseconds(50))
        let sent = ContinuousClock.now
        hub.notify("event:b")
        let at = try #require(await woken.value)
        #expect(at >= sent)
        #expect(await untouched.value == nil)
    }

    @Test func theHoldEndsAtItsTimeout() async {
        let hub = WakeHub()
        let subscription = hub.subscribe(["event:c"])
        let started = ContinuousClock.now
        #expect(await subscription.wait(timeout: .milliseconds(100)) == nil)
        let held = ContinuousClock.now - started
        #expect(held >= .milliseconds(100))
        #expect(held < .seconds(5))
    }

    @Test func cancellingTheTaskEndsTheHold() async {
        let hub = WakeHub()
        let subscription = hub.subscribe(["event:d"])
        let started = ContinuousClock.now
        let held = Task { await subscription.wait(timeout: .seconds(20)) }
        held.cancel()
        #expect(await held.value == nil)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func releasingSubscriptionsForgetsThem() async {
        let hub = WakeHub()
        var subscriptions = (0..<1000).map { hub.subscribe(["inbox:\($0 % 10)", "event:\($0)"]) }
        #expect(hub.waiting == 1000)
        let waits = subscriptions.prefix(500).map { subscription in
            Task { await subscription.wait(timeout: .seconds(20)) }
        }
        hub.notifyAll()
        for wait in waits { #expect(await wait.value != nil) }
        subscriptions.removeAll()
        #expect(hub.waiting == 0)
    }
}
