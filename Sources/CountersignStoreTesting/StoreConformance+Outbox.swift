import CountersignCore
public import CountersignStore
import Crypto
import Foundation

extension StoreConformance {
    static let outboxCases: [Case] = [
        Case(name: "push: a device's subscription is set, replaced and removed; revoking the device removes it") {
            store in
            let device = try await Fixture.enrolled(in: store)
            let first = Fixture.subscription("https://push.example/a")
            try await store.setPushSubscription(first, deviceID: device.id)
            try check(try await store.device(id: device.id)?.push == first, "read back with the device")
            let second = Fixture.subscription("https://push.example/b")
            try await store.setPushSubscription(second, deviceID: device.id)
            try check(
                try await store.devices(issuer: "ck_app", clientUserID: "alice").map(\.push) == [second],
                "replaced, and listed with the user's devices")
            try await store.setPushSubscription(nil, deviceID: device.id)
            try check(try await store.device(id: device.id)?.push == nil, "removed")
            try await store.setPushSubscription(first, deviceID: device.id)
            _ = try await store.revokeDevice(
                id: device.id, issuer: "ck_app", clientUserID: "alice", author: Fixture.author, now: Fixture.t0 + 1)
            try check(try await store.device(id: device.id)?.push == nil, "a revoked device has none")
            try await checkThrows(.conflict, "a subscription for a revoked device") {
                try await store.setPushSubscription(first, deviceID: device.id)
            }
            try await checkThrows(.notFound, "a subscription for an unknown device") {
                try await store.setPushSubscription(first, deviceID: "no-such-device")
            }
        },
        Case(name: "push: a push service's 'gone' removes the subscription only if it is still the same endpoint") {
            store in
            let device = try await Fixture.enrolled(in: store)
            try await store.setPushSubscription(Fixture.subscription("https://push.example/new"), deviceID: device.id)
            try check(
                try await !store.removePushSubscription(deviceID: device.id, endpoint: "https://push.example/old"),
                "an older endpoint's answer removes nothing")
            try check(try await store.device(id: device.id)?.push != nil, "the new subscription stays")
            try check(
                try await store.removePushSubscription(deviceID: device.id, endpoint: "https://push.example/new"),
                "the endpoint itself is removed")
            try check(try await store.device(id: device.id)?.push == nil, "and read as none")
        },
        Case(name: "VAPID keys: inserted, read back oldest first; a duplicate id is refused") { store in
            let old = BrokerSigningKey(id: "v1", privateKeyPEM: "pem1", createdAt: Fixture.t0)
            let new = BrokerSigningKey(id: "v0", privateKeyPEM: "pem2", createdAt: Fixture.t0 + 10)
            try await store.insertVAPIDKey(new)
            try await store.insertVAPIDKey(old)
            try check(try await store.vapidKeys() == [old, new], "oldest first")
            try check(try await store.signingKeys() == [], "kept apart from the token signing keys")
            try await checkThrows(.alreadyExists, "a duplicate VAPID key id") { try await store.insertVAPIDKey(old) }
        },
        Case(name: "VAPID keys: retiring one removes the subscriptions made with it; never the newest") { store in
            try await store.insertVAPIDKey(
                BrokerSigningKey(id: "vapid-1", privateKeyPEM: "pem1", createdAt: Fixture.t0))
            try await store.insertVAPIDKey(
                BrokerSigningKey(id: "vapid-2", privateKeyPEM: "pem2", createdAt: Fixture.t0 + 10))
            let old = try await Fixture.enrolled(in: store)
            let new = try await Fixture.enrolled(in: store)
            try await store.setPushSubscription(Fixture.subscription("https://push.example/old"), deviceID: old.id)
            var current = Fixture.subscription("https://push.example/new")
            current.vapidKeyID = "vapid-2"
            try await store.setPushSubscription(current, deviceID: new.id)
            try await checkThrows(.conflict, "retiring the newest key") {
                try await store.retireVAPIDKey(id: "vapid-2")
            }
            try await checkThrows(.notFound, "retiring an unknown key") { try await store.retireVAPIDKey(id: "nope") }
            try check(try await store.retireVAPIDKey(id: "vapid-1") == 1, "one subscription was made with it")
            try check(try await store.vapidKeys().map(\.id) == ["vapid-2"], "the key is gone")
            try check(try await store.device(id: old.id)?.push == nil, "so is its subscription")
            try check(try await store.device(id: new.id)?.push == current, "the other stays")
        },
        Case(name: "outbox: messages announced with a pending event are written with it, or not at all") { store in
            let limits = PendingLimits(perUser: 1)
            let event = Fixture.event()
            let message = Fixture.message(for: event)
            try await store.insertPendingEvent(
                event, by: .backend, limits: limits, announcing: [message], now: Fixture.t0)
            try check(try await store.outboxMessages(state: nil, limit: 10) == [message], "written as given")
            let refused = Fixture.event()
            try await checkThrows(.limitReached(retryAfter: 60), "an event over the limit") {
                try await store.insertPendingEvent(
                    refused, by: .backend, limits: limits, announcing: [Fixture.message(for: refused)],
                    now: Fixture.t0)
            }
            try check(try await store.outboxMessages(state: nil, limit: 10) == [message], "its message is not")
        },
        Case(name: "outbox: a due message is claimed once per lease; an attempt is recorded only under its claim") {
            store in
            let event = Fixture.event()
            let due = Fixture.message(for: event)
            var later = Fixture.message(for: event)
            later.nextAttemptAt = Fixture.t0 + 30
            try await store.insertPendingEvent(
                event, by: .backend, limits: PendingLimits(perUser: 5), announcing: [due, later], now: Fixture.t0)
            let claimed = try await store.claimOutboxMessages(
                limit: 10, lease: 20, claim: SecretToken.generate(), now: Fixture.t0)
            try check(claimed.map(\.message) == [due], "only the due message")
            try check(claimed.first?.leaseUntil == Fixture.t0 + 20, "leased for the time asked")
            try check(
                try await store.claimOutboxMessages(
                    limit: 10, lease: 20, claim: SecretToken.generate(), now: Fixture.t0 + 19
                ).isEmpty,
                "nobody else takes it while the lease runs")
            let again = try await store.claimOutboxMessages(
                limit: 10, lease: 20, claim: SecretToken.generate(), now: Fixture.t0 + 20)
            try check(again.map(\.message.id) == [due.id], "a lease that ran out lets it be claimed again")
            try check(again.first?.claim != claimed.first?.claim, "under a new claim")
            try await checkThrows(.conflict, "an attempt under the claim that ran out") {
                try await store.finishOutboxAttempt(
                    id: due.id, claim: claimed[0].claim, outcome: .delivered, now: Fixture.t0 + 21)
            }
            try await store.finishOutboxAttempt(
                id: due.id, claim: again[0].claim, outcome: .delivered, now: Fixture.t0 + 21)
            let delivered = try await store.outboxMessages(state: .delivered, limit: 10)
            try check(delivered.map(\.id) == [due.id], "delivered")
            try check(delivered.first?.attempts == 1, "one attempt counted")
            try check(delivered.first?.finishedAt == Fixture.t0 + 21, "finished when recorded")
            try await checkThrows(.conflict, "an attempt on a finished message") {
                try await store.finishOutboxAttempt(
                    id: due.id, claim: again[0].claim, outcome: .delivered, now: Fixture.t0 + 22)
            }
            try await checkThrows(.notFound, "an unknown message") {
                try await store.finishOutboxAttempt(id: "msg_none", claim: "x", outcome: .delivered, now: Fixture.t0)
            }
        },
        Case(name: "outbox: a claim with a share gives no receiver more than it; the others' come first") {
            store in
            // Six due first for two endpoints on one server (one receiver),
            // then one each for two devices at two push services.
            let event = Fixture.event()
            let hooks = "https://hooks.example:443"
            var messages: [OutboxMessage] = (0..<6).map { index in
                var message = Fixture.message(for: event)
                (message.kind, message.target, message.receiver, message.nextAttemptAt) = (
                    .webhook, index.isMultiple(of: 2) ? "wh_slow" : "wh_other", hooks, Fixture.t0 + Double(index)
                )
                return message
            }
            for (index, device) in ["device-1", "device-2"].enumerated() {
                var message = Fixture.message(for: event)
                (message.target, message.receiver, message.nextAttemptAt) = (
                    device, "https://push-\(index).example:443", Fixture.t0 + 10 + Double(index)
                )
                messages.append(message)
            }
            // And one due only later, for a third device.
            var behind = Fixture.message(for: event)
            (behind.target, behind.nextAttemptAt) = ("device-3", Fixture.t0 + 25)
            try await store.insertPendingEvent(
                event, by: .backend, limits: PendingLimits(perUser: 5), announcing: messages + [behind],
                now: Fixture.t0)
            let now = Fixture.t0 + 20
            let first = try await store.claimOutboxMessages(
                limit: 10, lease: 30, claim: "c1", now: now, share: OutboxShare(perReceiver: 2, inFlight: [:]))
            try check(
                first.map(\.message.id) == [messages[0].id, messages[1].id, messages[6].id, messages[7].id],
                "two of the server's, its oldest (one per endpoint), and the devices' behind them: "
                    + "\(first.map(\.message.target))")
            try check(
                first.map(\.message.receiver) == [hooks, hooks, messages[6].receiver, messages[7].receiver],
                "each as queued, with its receiver")
            // The share counts the caller's attempts in flight, as it says
            // them: here one to the server.
            let second = try await store.claimOutboxMessages(
                limit: 10, lease: 30, claim: "c2", now: now,
                share: OutboxShare(perReceiver: 2, inFlight: [hooks: 1]))
            try check(second.map(\.message.id) == [messages[2].id], "one more, to make its share")
            try check(
                try await store.claimOutboxMessages(
                    limit: 10, lease: 30, claim: "c3", now: now,
                    share: OutboxShare(perReceiver: 2, inFlight: [hooks: 2])
                ).isEmpty, "none while its share is in flight")
            // A claim of one, with the server's backlog at the head and at
            // its share: the message behind it is found, not the backlog's.
            let past = try await store.claimOutboxMessages(
                limit: 1, lease: 30, claim: "c5", now: Fixture.t0 + 26,
                share: OutboxShare(perReceiver: 2, inFlight: [hooks: 2]))
            try check(past.map(\.message.id) == [behind.id], "the next receiver's, past the full one's")
            let unshared = try await store.claimOutboxMessages(limit: 10, lease: 30, claim: "c4", now: now)
            try check(
                unshared.map(\.message.id) == Array(messages[3..<6].map(\.id)), "without a share, all that are due")
        },
        Case(name: "outbox: a retry queues the message again at its time; failed and cancelled ones finish") { store in
            let event = Fixture.event()
            let messages = (0..<3).map { _ in Fixture.message(for: event) }
            try await store.insertPendingEvent(
                event, by: .backend, limits: PendingLimits(perUser: 5), announcing: messages, now: Fixture.t0)
            let claimed = try await store.claimOutboxMessages(
                limit: 10, lease: 20, claim: SecretToken.generate(), now: Fixture.t0)
            try check(Set(claimed.map(\.message.id)) == Set(messages.map(\.id)), "all three")
            let byID = Dictionary(uniqueKeysWithValues: claimed.map { ($0.message.id, $0.claim) })
            try await store.finishOutboxAttempt(
                id: messages[0].id, claim: byID[messages[0].id]!,
                outcome: .retry(at: Fixture.t0 + 5, reason: "503 from the push service"), now: Fixture.t0 + 1)
            try await store.finishOutboxAttempt(
                id: messages[1].id, claim: byID[messages[1].id]!, outcome: .failed(reason: "403"), now: Fixture.t0 + 1)
            try await store.finishOutboxAttempt(
                id: messages[2].id, claim: byID[messages[2].id]!, outcome: .cancelled(reason: "decided"),
                now: Fixture.t0 + 1)
            let queued = try await store.outboxMessages(state: .queued, limit: 10)
            try check(queued.map(\.id) == [messages[0].id], "the retried one is queued")
            try check(queued.first?.nextAttemptAt == Fixture.t0 + 5, "for its next attempt")
            try check(queued.first?.attempts == 1, "with the attempt counted")
            try check(queued.first?.lastError == "503 from the push service", "and why it failed")
            try check(
                try await store.claimOutboxMessages(
                    limit: 10, lease: 20, claim: SecretToken.generate(), now: Fixture.t0 + 4
                ).isEmpty,
                "not due before its time, though no lease runs")
            let retried = try await store.claimOutboxMessages(
                limit: 10, lease: 20, claim: SecretToken.generate(), now: Fixture.t0 + 5)
            try check(retried.map(\.message.id) == [messages[0].id], "due at its time")
            try check(
                try await store.outboxMessages(state: .failed, limit: 10).map(\.lastError) == ["403"],
                "the failed one keeps its reason")
            try check(try await store.outboxMessages(state: .cancelled, limit: 10).count == 1, "one cancelled")
        },
        Case(name: "outbox: finished messages are collected after the retention; queued ones never") { store in
            let event = Fixture.event()
            let messages = (0..<2).map { _ in Fixture.message(for: event) }
            try await store.insertPendingEvent(
                event, by: .backend, limits: PendingLimits(perUser: 5), announcing: messages, now: Fixture.t0)
            let claimed = try await store.claimOutboxMessages(
                limit: 1, lease: 20, claim: SecretToken.generate(), now: Fixture.t0)
            try await store.finishOutboxAttempt(
                id: claimed[0].message.id, claim: claimed[0].claim, outcome: .delivered, now: Fixture.t0 + 1)
            try await store.garbageCollect(now: Fixture.t0 + 10, eventsEndedBefore: Fixture.t0)
            try check(try await store.outboxMessages(state: nil, limit: 10).count == 2, "kept while recent")
            try await store.garbageCollect(now: Fixture.t0 + 100_000, eventsEndedBefore: Fixture.t0 + 50_000)
            try check(
                try await store.outboxMessages(state: nil, limit: 10).map(\.state) == [.queued],
                "the finished one went; the queued one stays")
        },
        Case(name: "outbox: claims made at the same time never share a message") { store in
            let event = Fixture.event()
            let messages = (0..<40).map { _ in Fixture.message(for: event) }
            try await store.insertPendingEvent(
                event, by: .backend, limits: PendingLimits(perUser: 5), announcing: messages, now: Fixture.t0)
            let claims = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        var mine: [String] = []
                        while true {
                            let batch = try await store.claimOutboxMessages(
                                limit: 3, lease: 60, claim: SecretToken.generate(), now: Fixture.t0)
                            if batch.isEmpty { return mine }
                            mine += batch.map(\.message.id)
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            try check(claims.count == 40, "every message claimed once, not \(claims.count) times")
            try check(Set(claims) == Set(messages.map(\.id)), "and each of them")
        },
    ]
}

extension Fixture {
    static func subscription(_ endpoint: String) -> PushSubscription {
        PushSubscription(
            endpoint: endpoint, p256dh: P256.KeyAgreement.PrivateKey().publicKey.x963Representation,
            auth: Data((0..<16).map { _ in UInt8.random(in: 0...255) }), vapidKeyID: "vapid-1",
            updatedAt: t0)
    }

    static func message(for event: ApprovalEvent) -> OutboxMessage {
        OutboxMessage(
            kind: .webPush, target: "device-1", receiver: "https://push.example:443", eventID: event.id,
            payload: Data(#"{"type":"event.pending"}"#.utf8), createdAt: t0, deliverUntil: event.expiresAt)
    }
}

extension StoreConformance {
    /// Messages an older broker queued, whose rows keep no receiver, share
    /// by their kind and target (``OutboxMessage/receiver(kind:target:)``),
    /// as they did then. `forget` clears the receiver of these message ids
    /// the way the store keeps such a row.
    public static func outboxRowsWithoutReceivers(
        _ store: any CountersignStore, forget: @Sendable ([String]) async throws -> Void
    ) async throws {
        let event = Fixture.event()
        let hooks = "https://hooks.example:443"
        let messages: [OutboxMessage] = (0..<3).map { index in
            var message = Fixture.message(for: event)
            (message.kind, message.target, message.receiver, message.nextAttemptAt) = (
                .webhook, index < 2 ? "wh_old" : "wh_new", hooks, Fixture.t0 + Double(index)
            )
            return message
        }
        try await store.insertPendingEvent(
            event, by: .backend, limits: PendingLimits(perUser: 5), announcing: messages, now: Fixture.t0)
        try await forget([messages[0].id, messages[1].id])
        let old = OutboxMessage.receiver(kind: .webhook, target: "wh_old")
        let claimed = try await store.claimOutboxMessages(
            limit: 10, lease: 30, claim: "c1", now: Fixture.t0 + 5, share: OutboxShare(perReceiver: 1, inFlight: [:]))
        try check(
            claimed.map(\.message.id) == [messages[0].id, messages[2].id],
            "the old endpoint's oldest, in a share of its own, and the new one's: \(claimed.map(\.message.target))")
        try check(claimed.map(\.message.receiver) == [old, hooks], "read back as \(old) and as queued")
        try check(
            try await store.claimOutboxMessages(
                limit: 10, lease: 30, claim: "c2", now: Fixture.t0 + 5,
                share: OutboxShare(perReceiver: 1, inFlight: [old: 1])
            ).isEmpty, "the old endpoint's next waits for its share")
    }
}
