import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let cibaCases: [Case] = [
        Case(name: "CIBA: the request commits with its event; polls pace, then tokens once, even polled at once") {
            store in
            let device = try await Fixture.enrolled(in: store)
            let event = Fixture.event(match: nil)
            let request = CIBARequest(
                eventID: event.id, apiKeyID: "ck_app", scope: "openid", interval: 2, nextPollAt: Fixture.t0,
                createdAt: Fixture.t0)
            try await store.insertPendingEvent(
                event, by: .backend, limits: PendingLimits(perUser: 3), announcing: [], ciba: request, now: Fixture.t0)
            try check(try await store.cibaRequest(eventID: event.id) == request, "stored as given")
            try check(try await store.cibaRequest(eventID: "ev_other") == nil, "no request for another event")

            // A refused event takes its request with it.
            let refused = Fixture.event(match: nil)
            try await checkThrows(.limitReached(retryAfter: 60), "over the per-user cap") {
                try await store.insertPendingEvent(
                    refused, by: .backend, limits: PendingLimits(perUser: 1), announcing: [],
                    ciba: CIBARequest(
                        eventID: refused.id, apiKeyID: "ck_app", scope: "openid", interval: 2,
                        nextPollAt: Fixture.t0, createdAt: Fixture.t0),
                    now: Fixture.t0)
            }
            try check(try await store.cibaRequest(eventID: refused.id) == nil, "no request without its event")

            guard
                case .pending(let first) = try await store.pollCIBARequest(eventID: event.id, now: Fixture.t0 + 1)
                    .outcome
            else { return try check(false, "a first poll of a pending request is pending") }
            try check(first.nextPollAt == Fixture.t0 + 3, "the next poll is an interval away")
            guard
                case .slowDown(let slowed) = try await store.pollCIBARequest(eventID: event.id, now: Fixture.t0 + 2)
                    .outcome
            else { return try check(false, "a poll before the interval is slow_down") }
            try check(slowed.interval == 7, "the interval grew by five seconds")
            try check(
                try await store.cibaRequest(eventID: event.id)?.interval == 7, "the grown interval is stored")

            _ = try await store.settleEvent(
                id: event.id, decision: RecordedDecision(status: .approved, deviceID: device.id, jws: "jws"),
                now: Fixture.t0 + 3)
            // Two token requests at once: one gets the tokens.
            async let one = store.pollCIBARequest(eventID: event.id, now: Fixture.t0 + 20)
            async let two = store.pollCIBARequest(eventID: event.id, now: Fixture.t0 + 20)
            let polls = [try await one, try await two]
            let outcomes = polls.map(\.outcome)
            let issued = polls.filter { if case .issue = $0.outcome { true } else { false } }
            try check(issued.count == 1 && outcomes.contains(.redeemed), "\(outcomes)")
            try check(
                issued.first?.event.status(at: Fixture.t0 + 20) == .approved,
                "tokens are issued for the event as decided")
            try check(
                try await store.cibaRequest(eventID: event.id)?.redeemedAt == Fixture.t0 + 20, "marked redeemed")
            try await checkThrows(.notFound, "polling a request that does not exist") {
                _ = try await store.pollCIBARequest(eventID: "ev_unknown", now: Fixture.t0)
            }
        },
        Case(name: "CIBA: rejected is denied and expired is expired, changing nothing") { store in
            let device = try await Fixture.enrolled(in: store)
            let rejected = Fixture.event(match: nil)
            let unanswered = Fixture.event(window: 30, match: nil)
            for event in [rejected, unanswered] {
                try await store.insertPendingEvent(
                    event, by: .backend, limits: PendingLimits(perUser: 3), announcing: [],
                    ciba: CIBARequest(
                        eventID: event.id, apiKeyID: "ck_app", scope: "openid", interval: 2, nextPollAt: Fixture.t0,
                        createdAt: Fixture.t0),
                    now: Fixture.t0)
            }
            _ = try await store.settleEvent(
                id: rejected.id, decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws"),
                now: Fixture.t0 + 3)
            try check(
                try await store.pollCIBARequest(eventID: rejected.id, now: Fixture.t0 + 10).outcome == .denied, "denied"
            )
            try check(
                try await store.pollCIBARequest(eventID: unanswered.id, now: Fixture.t0 + 31).outcome == .expired,
                "expired")
            try check(
                try await store.cibaRequest(eventID: unanswered.id)?.nextPollAt == Fixture.t0, "nothing written")
        },
        Case(name: "CIBA: ping mode: the notification commits with the decision or the expiry, poll mode gets none") {
            store in
            try await Fixture.apiKey("ck_app", in: store)
            try await checkThrows(.notFound, "registering an unknown key") {
                try await store.setCIBANotificationEndpoint("https://a.example/ciba", apiKeyID: "ck_x", now: Fixture.t0)
            }
            try await store.setCIBANotificationEndpoint("https://a.example/ciba", apiKeyID: "ck_app", now: Fixture.t0)
            try check(
                try await store.cibaNotificationEndpoint(apiKeyID: "ck_app") == "https://a.example/ciba", "registered")
            let device = try await Fixture.enrolled(in: store)
            func request(_ event: ApprovalEvent, ping: Bool) -> CIBARequest {
                CIBARequest(
                    eventID: event.id, apiKeyID: "ck_app", scope: "openid", interval: 2, nextPollAt: Fixture.t0,
                    notificationToken: ping ? "token-0123456789abcdef" : nil,
                    notificationEndpoint: ping ? "https://a.example/ciba" : nil,
                    authRequestID: ping ? "\(event.id).secret" : nil, createdAt: Fixture.t0)
            }
            var pinged = Fixture.event(match: nil)
            var polled = Fixture.event(match: nil)
            var unanswered = Fixture.event(window: 30, match: nil)
            // As the CIBA endpoint makes them.
            pinged.channel = .ciba
            polled.channel = .ciba
            unanswered.channel = .ciba
            for (event, ping) in [(pinged, true), (polled, false), (unanswered, true)] {
                try await store.insertPendingEvent(
                    event, by: .backend, limits: PendingLimits(perUser: 5), announcing: [],
                    ciba: request(event, ping: ping), now: Fixture.t0)
            }
            // A wrong number leaves the request pending: nothing to ping about yet.
            _ = try await store.updateEvent(id: pinged.id, spending: nil, now: Fixture.t0 + 2) {
                $0.countingWrongMatch(maxWrong: 3, at: Fixture.t0 + 2)
            }
            for event in [pinged, polled] {
                _ = try await store.settleEvent(
                    id: event.id, decision: RecordedDecision(status: .approved, deviceID: device.id, jws: "jws"),
                    now: Fixture.t0 + 3)
            }
            _ = try await store.announceExpiredEvents(now: Fixture.t0 + 31, limit: 100)
            let pings = try await store.outboxMessages(
                targets: [pinged.id, polled.id, unanswered.id], state: nil, limit: 10
            ).filter { $0.kind == .cibaPing }
            try check(
                Set(pings.map(\.target)) == [pinged.id, unanswered.id] && pings.count == 2,
                "one ping each, when answered or expired: \(pings)")
            let payload = pings.first { $0.target == pinged.id }?.payload ?? Data()
            let body = try JSONSerialization.jsonObject(with: payload) as? [String: String]
            try check(body == ["auth_req_id": "\(pinged.id).secret"], "the body carries the auth_req_id")

            try await store.setCIBANotificationEndpoint(nil, apiKeyID: "ck_app", now: Fixture.t0)
            try check(try await store.cibaNotificationEndpoint(apiKeyID: "ck_app") == nil, "back to poll mode")
        },
        Case(name: "CIBA: a grant's refresh tokens keep the user and acr across a rotation") { store in
            let record = RefreshTokenRecord(
                digest: Data(repeating: 7, count: 32), familyID: "ciba:ev_1", apiKeyID: "ck_app", identityID: "",
                createdAt: Fixture.t0, expiresAt: Fixture.t0 + 3600, authTime: Fixture.t0,
                clientUserID: "alice", acr: ApprovalAuthentication.deviceACR)
            try await store.insertRefreshToken(record)
            try check(try await store.refreshToken(digest: record.digest) == record, "read back as written")
            let replacement = RefreshTokenRecord(
                digest: Data(repeating: 8, count: 32), familyID: "ignored", apiKeyID: "ck_app", identityID: "",
                createdAt: Fixture.t0 + 5, expiresAt: Fixture.t0 + 3605, clientUserID: "alice")
            let rotated = try await store.rotateRefreshToken(
                digest: record.digest, replacement: replacement, now: Fixture.t0 + 5)
            try check(
                rotated.familyID == "ciba:ev_1" && rotated.acr == ApprovalAuthentication.deviceACR
                    && rotated.clientUserID == "alice" && rotated.authTime == Fixture.t0, "\(rotated)")
        },
    ]
}
