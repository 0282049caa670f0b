import CountersignCore
import Crypto
import Foundation
import Testing

@Suite("delivery back-off and push subscriptions")
struct OutboxRulesTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("steps double from the first to the longest, each waited between half and all of its length")
    func steps() {
        let backoff = DeliveryBackoff(first: 1, longest: 15)
        for (attempts, step) in [(1, 1.0), (2, 2), (3, 4), (4, 8), (5, 15), (40, 15)] {
            for (jitter, share) in [(0.0, 0.5), (0.999_999, 1.0)] {
                guard
                    case .retry(let at, _) = backoff.afterFailure(
                        attempts: attempts, reason: "503", deliverUntil: now + 3600, now: now, jitter: jitter)
                else {
                    Issue.record("attempt \(attempts) gave up")
                    continue
                }
                #expect(abs(at.timeIntervalSince(now) - step * share) < 0.001, "attempt \(attempts)")
            }
        }
    }

    @Test("a message's receiver is its URL's origin, port written; every device at one push service shares it")
    func receivers() {
        for (url, receiver) in [
            ("https://fcm.googleapis.com/fcm/send/abc", "https://fcm.googleapis.com:443"),
            ("https://FCM.GoogleAPIs.com:443/fcm/send/def", "https://fcm.googleapis.com:443"),
            ("HTTP://127.0.0.1:8080/hooks/countersign", "http://127.0.0.1:8080"),
            ("http://app.internal/ciba?x=1", "http://app.internal:80"),
            ("not a url", "not a url"),
        ] {
            #expect(OutboxMessage.receiver(of: url) == receiver, "\(url)")
        }
        #expect(
            OutboxMessage.receiver(of: "https://push.example/a")
                != OutboxMessage.receiver(of: "https://push.example:8443/a"))
        #expect(OutboxMessage.receiver(kind: .webPush, target: "dev_1") == "web_push:dev_1")
    }

    @Test("a receiver's Retry-After is honoured; past the deadline it fails with the reason")
    func retryAfterAndDeadline() {
        let backoff = DeliveryBackoff.push
        #expect(
            backoff.afterFailure(
                attempts: 1, reason: "429", retryAfter: 30, deliverUntil: now + 60, now: now, jitter: 0)
                == .retry(at: now + 30, reason: "429"))
        guard
            case .failed(let reason) = backoff.afterFailure(
                attempts: 3, reason: "503", deliverUntil: now + 1, now: now, jitter: 0)
        else {
            Issue.record("did not give up")
            return
        }
        #expect(reason.contains("3 attempts") && reason.contains("503"))
    }

    @Test("a push notice's title comes from the event's kind, never from what the requester wrote")
    func noticeTitle() throws {
        var event = ApprovalEvent.pending(
            issuer: "ck_app", user: "alice", name: "CUSTOM_THING", ip: "203.0.113.7", location: "Somewhere",
            details: "<b>Pay 1000 EUR</b>", requesterName: "evil-laptop", matchNumber: "42",
            requesterTokenDigest: Data(), newDevice: nil, now: now, window: 60)
        #expect(PushNotice(for: event, app: "demo").title == "Approval request")
        event.name = EventName.login
        let notice = PushNotice(for: event, app: "demo")
        #expect(notice.title == "Sign-in request")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(notice.wireJSON())) as? [String: String])
        #expect(Set(json.keys) == ["type", "event_id", "app", "title", "expires_at"], "nothing else is in a push")
        for secret in ["203.0.113.7", "Somewhere", "Pay", "evil-laptop"] {
            #expect(!json.values.contains { $0.contains(secret) }, "\(secret) is not in the push")
        }
    }

    @Test("a queued push is sent only while its event waits, to an unrevoked device that still has a subscription")
    func pushVerdicts() {
        let event = ApprovalEvent.pending(
            issuer: "ck_app", user: "alice", name: EventName.login, ip: "203.0.113.7", location: "Unknown",
            details: nil, requesterName: nil, matchNumber: "42", requesterTokenDigest: Data(), newDevice: nil, now: now,
            window: 60)
        let subscription = PushSubscription(
            endpoint: "https://push.example/a", p256dh: Data(count: 65), auth: Data(count: 16), vapidKeyID: "v1",
            updatedAt: now)
        var device = TrustedDevice(
            publicKey: DevicePublicKey(P256.Signing.PrivateKey().publicKey), issuer: "ck_app", clientUserID: "alice",
            name: "phone",
            type: "browser", createdAt: now)
        #expect(PushRules.recipients(of: [device]).isEmpty, "no subscription, no push")
        device.push = subscription
        #expect(PushRules.recipients(of: [device]).map(\.id) == [device.id])
        #expect(PushRules.attempt(event: event, device: device, now: now + 20.5) == .send(subscription, ttl: 40))
        guard case .cancel = PushRules.attempt(event: event, device: device, now: now + 60) else {
            Issue.record("an expired event's push was sent")
            return
        }
        var decided = event
        decided.storedStatus = .approved
        #expect(PushRules.attempt(event: decided, device: device, now: now) != .send(subscription, ttl: 60))
        #expect(PushRules.attempt(event: nil, device: device, now: now) != .send(subscription, ttl: 60))
        var revoked = device
        revoked.revokedAt = now
        #expect(PushRules.recipients(of: [revoked]).isEmpty)
        #expect(PushRules.attempt(event: event, device: revoked, now: now) != .send(subscription, ttl: 60))
        #expect(PushRules.attempt(event: event, device: nil, now: now) != .send(subscription, ttl: 60))
    }
}
