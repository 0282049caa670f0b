import Testing

@testable import CountersignBroker

@Suite struct WakeHubTests {
    @Test func aNotificationBeforeTheWaitIsKeptForIt() async {
        let hub = WakeHub()
        let subscription = hub.subscribe(["event:a"])
        hub.notify("event:a")
        // Non-nil: woken by the notification, not by the hour's timeout.
        #expect(await subscription.wait(timeout: .seconds(3600)) != nil)
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

    /// A timer that never fired would hang the wait: the time limit ends
    /// the test then, with no bound on how late a busy machine runs it.
    @Test(.timeLimit(.minutes(2))) func theHoldEndsAtItsTimeout() async {
        let hub = WakeHub()
        let subscription = hub.subscribe(["event:c"])
        let started = ContinuousClock.now
        #expect(await subscription.wait(timeout: .milliseconds(100)) == nil)
        let held = ContinuousClock.now - started
        #expect(held >= .milliseconds(100))
    }

    /// The hold is an hour: that it ends within the time limit shows the
    /// cancellation ended it.
    @Test(.timeLimit(.minutes(2))) func cancellingTheTaskEndsTheHold() async {
        let hub = WakeHub()
        let subscription = hub.subscribe(["event:d"])
        let held = Task { await subscription.wait(timeout: .seconds(3600)) }
        held.cancel()
        #expect(await held.value == nil)
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

    @Test("a holder's poll past its limit replaces its oldest, which ends at once; other holders are untouched")
    func pollsPerHolder() async throws {
        let hub = WakeHub(pollsPerHolder: 2)
        let first = hub.subscribe(["inbox:u1"])
        first.claim(holder: "device/a")
        let parked = Task { await first.wait(timeout: .seconds(3600)) }
        let second = hub.subscribe(["inbox:u1"])
        second.claim(holder: "device/a")
        let other = hub.subscribe(["inbox:u1"])
        other.claim(holder: "device/b")
        let unclaimed = hub.subscribe(["inbox:u1"])
        #expect(!first.isReplaced)

        let third = hub.subscribe(["inbox:u1"])
        third.claim(holder: "device/a")
        // The parked oldest returns without a notification (nil), long
        // before its hour, and says why; its later waits return at once.
        #expect(await parked.value == nil)
        #expect(first.isReplaced)
        #expect(await first.wait(timeout: .seconds(3600)) == nil)
        #expect(!second.isReplaced && !third.isReplaced && !other.isReplaced && !unclaimed.isReplaced)

        // A fourth replaces the second, not the third.
        let fourth = hub.subscribe(["inbox:u1"])
        fourth.claim(holder: "device/a")
        #expect(second.isReplaced && !third.isReplaced && !fourth.isReplaced)

        // Those left still wake on their key.
        hub.notify("inbox:u1")
        for subscription in [third, fourth, other, unclaimed] {
            #expect(await subscription.wait(timeout: .seconds(3600)) != nil)
        }
        #expect(hub.waiting == 6)
        #expect(hub.held == 3, "claimed and not replaced: third, fourth and other")
    }

    @Test("a released poll frees its holder's place")
    func releasedPollsFreeTheirPlace() async throws {
        let hub = WakeHub(pollsPerHolder: 1)
        var first: WakeHub.Subscription? = hub.subscribe(["event:e"])
        first?.claim(holder: "requester/e")
        first = nil
        let second = hub.subscribe(["event:e"])
        second.claim(holder: "requester/e")
        #expect(!second.isReplaced)
        #expect(hub.waiting == 1 && hub.held == 1)
    }
}
