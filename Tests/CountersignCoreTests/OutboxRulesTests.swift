import CountersignCore
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
}
