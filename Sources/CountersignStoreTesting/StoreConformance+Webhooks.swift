import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let webhookCases: [Case] = [
        Case(name: "webhooks: an endpoint is added to a live API key, read back, changed and deleted") { store in
            try await Fixture.apiKey("ck_app", in: store)
            let endpoint = Fixture.endpoint(types: [.eventApproved, .deviceRemoved])
            try await store.insertWebhookEndpoint(endpoint)
            try check(try await store.webhookEndpoint(id: endpoint.id) == endpoint, "read back as written")
            try check(try await store.webhookEndpoints(apiKeyID: "ck_app") == [endpoint], "listed with its key")
            try await checkThrows(.alreadyExists, "a duplicate endpoint id") {
                try await store.insertWebhookEndpoint(endpoint)
            }
            try await checkThrows(.notFound, "an endpoint of an unknown API key") {
                try await store.insertWebhookEndpoint(Fixture.endpoint(apiKeyID: "ck_nobody"))
            }
            var changed = endpoint
            changed.url = "https://hooks.example/v2"
            changed.types = []
            changed.previousSecret = endpoint.secret
            changed.previousUntil = Fixture.t0 + 3600
            changed.secret = WebhookSecret.generate()
            changed.disabledAt = Fixture.t0 + 5
            changed.disabledReason = "by hand"
            try await store.updateWebhookEndpoint(changed)
            try check(try await store.webhookEndpoint(id: endpoint.id) == changed, "every field written")
            try await checkThrows(.notFound, "changing an unknown endpoint") {
                try await store.updateWebhookEndpoint(Fixture.endpoint())
            }
            try await store.deleteWebhookEndpoint(id: endpoint.id, now: Fixture.t0 + 10)
            try check(try await store.webhookEndpoint(id: endpoint.id) == nil, "deleted")
            try await checkThrows(.notFound, "deleting it twice") {
                try await store.deleteWebhookEndpoint(id: endpoint.id, now: Fixture.t0 + 11)
            }
            try await Fixture.apiKey("ck_gone", in: store)
            _ = try await store.revokeAPIKey(
                id: "ck_gone", change: APIKeyChange(apiKeyID: "ck_gone", action: .revoked, via: "cli", at: Fixture.t0))
            try await checkThrows(.notFound, "an endpoint of a revoked API key") {
                try await store.insertWebhookEndpoint(Fixture.endpoint(apiKeyID: "ck_gone"))
            }
        },
        Case(name: "webhooks: each change to an event or a device is written to the outbox with it, per endpoint") {
            store in
            try await Fixture.apiKey("ck_app", in: store)
            try await Fixture.apiKey("ck_other", in: store)
            let all = Fixture.endpoint()
            let approvals = Fixture.endpoint(types: [.eventApproved])
            var disabled = Fixture.endpoint()
            disabled.disabledAt = Fixture.t0
            let otherApp = Fixture.endpoint(apiKeyID: "ck_other")
            for endpoint in [all, approvals, disabled, otherApp] { try await store.insertWebhookEndpoint(endpoint) }

            let device = try await Fixture.enrolled(in: store)
            let login = Fixture.event()
            try await store.insertPendingEvent(login, maxPending: 5, now: Fixture.t0 + 0.5)
            _ = try await store.settleEvent(
                id: login.id, decision: RecordedDecision(status: .approved, deviceID: device.id, jws: "jws"),
                now: Fixture.t0 + 1)
            let rejected = Fixture.event()
            try await store.insertPendingEvent(rejected, maxPending: 5, now: Fixture.t0 + 1.5)
            _ = try await store.recordWrongMatch(id: rejected.id, maxWrong: 1, spending: nil, now: Fixture.t0 + 2)
            let withdrawn = Fixture.event()
            try await store.insertPendingEvent(withdrawn, maxPending: 5, now: Fixture.t0 + 2.5)
            _ = try await store.withdrawEvent(id: withdrawn.id, now: Fixture.t0 + 3)
            _ = try await store.revokeDevice(
                id: device.id, issuer: "ck_app", clientUserID: "alice", author: Fixture.author, now: Fixture.t0 + 4)
            // A change refused writes nothing.
            try await checkThrows(.conflict, "deciding a decided event") {
                try await store.settleEvent(
                    id: login.id, decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws"),
                    now: Fixture.t0 + 5)
            }

            let toAll = try await Fixture.webhooks(in: store, to: all.id)
            try check(
                toAll.map(\.type) == [
                    "device.enrolled", "event.created", "event.approved", "event.created", "event.rejected",
                    "event.created", "event.withdrawn", "device.removed",
                ], "every change, in order: \(toAll.map(\.type))")
            try check(
                toAll.map(\.subject) == [
                    device.id, login.id, login.id, rejected.id, rejected.id, withdrawn.id, withdrawn.id, device.id,
                ], "each about its event or device")
            let toApprovals = try await Fixture.webhooks(in: store, to: approvals.id)
            try check(toApprovals.map(\.type) == ["event.approved"], "only the types an endpoint wants")
            try check(try await Fixture.webhooks(in: store, to: disabled.id).isEmpty, "nothing to a disabled endpoint")
            try check(try await Fixture.webhooks(in: store, to: otherApp.id).isEmpty, "nothing to another app's")
            let approved = try await store.outboxMessages(targets: [approvals.id], state: nil, limit: 10)
            try check(
                approved.map(\.eventID) == [login.id]
                    && approved.allSatisfy { $0.kind == .webhook && $0.state == .queued },
                "queued webhook messages, linked to their event")
            try check(
                approved.first?.deliverUntil == Fixture.t0 + 1 + WebhookNotice.deliveryTime,
                "tried for three days from the change")
        },
        Case(name: "webhooks: an approval that adds a device, and a code that settles an event, announce both") {
            store in
            try await Fixture.apiKey("ck_app", in: store)
            let endpoint = Fixture.endpoint()
            try await store.insertWebhookEndpoint(endpoint)
            let (approver, candidate, pairing) = try await Fixture.pairing(in: store, user: "bob")
            _ = try await store.settleEvent(
                id: pairing.id,
                decision: RecordedDecision(status: .approved, deviceID: approver.id, jws: "jws", enrolls: candidate),
                now: Fixture.t0 + 1)
            try await store.setTOTPSecret(Data([1]), deviceID: approver.id)
            let login = Fixture.event(user: "bob")
            try await store.insertPendingEvent(login, maxPending: 5, now: Fixture.t0)
            _ = try await store.acceptTOTPCode(deviceID: approver.id, step: 7, eventID: login.id, now: Fixture.t0 + 2)
            // Changes of one moment in any order; the moments in order.
            let sent = try await Fixture.webhooks(in: store, to: endpoint.id)
            let expected = [
                (0.0, "device.enrolled", approver.id), (0, "event.created", pairing.id), (0, "event.created", login.id),
                (1, "device.enrolled", candidate.id), (1, "event.approved", pairing.id),
                (2, "event.approved", login.id),
            ].map { "\($0.0) \($0.1) \($0.2)" }
            let got = sent.map { "\($0.at.timeIntervalSince(Fixture.t0)) \($0.type) \($0.subject)" }
            try check(got.sorted() == expected.sorted(), "\(got)")
        },
        Case(name: "webhooks: an event whose window ran out is announced once; withdrawn, decided and live ones not") {
            store in
            try await Fixture.apiKey("ck_app", in: store)
            let endpoint = Fixture.endpoint(types: [.eventExpired])
            try await store.insertWebhookEndpoint(endpoint)
            let device = try await Fixture.enrolled(in: store)
            let expiring = Fixture.event(window: 60)
            let withdrawn = Fixture.event(window: 60)
            let decided = Fixture.event(window: 60)
            let live = Fixture.event(window: 600)
            for event in [expiring, withdrawn, decided, live] {
                try await store.insertPendingEvent(event, maxPending: 10, now: Fixture.t0)
            }
            _ = try await store.withdrawEvent(id: withdrawn.id, now: Fixture.t0 + 1)
            _ = try await store.settleEvent(
                id: decided.id, decision: RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws"),
                now: Fixture.t0 + 2)
            try check(
                try await store.announceExpiredEvents(now: Fixture.t0 + 59, limit: 10) == 0, "nothing expired yet")
            try check(try await store.announceExpiredEvents(now: Fixture.t0 + 61, limit: 10) == 1, "one expired")
            try check(try await store.announceExpiredEvents(now: Fixture.t0 + 62, limit: 10) == 0, "announced once")
            let sent = try await Fixture.webhooks(in: store, to: endpoint.id)
            try check(
                sent.map(\.type) == ["event.expired"] && sent.first?.subject == expiring.id
                    && sent.first?.at == Fixture.t0 + 61, "\(sent)")
            try check(
                try await store.event(id: expiring.id)?.status(at: Fixture.t0 + 61) == .expired,
                "the event itself is unchanged: expired by its window")
        },
        Case(name: "webhooks: the code attempt that reaches the failure limit announces the lock, once per lock") {
            store in
            try await Fixture.apiKey("ck_app", in: store)
            let endpoint = Fixture.endpoint(types: [.accountLocked])
            try await store.insertWebhookEndpoint(endpoint)
            let limits = CodeLimits(lockoutAfter: 2, firstLockout: 60, maxLockout: 600)
            _ = try await store.reserveCodeAttempt(
                issuer: "ck_app", clientUserID: "alice", eventID: nil, limits: limits, now: Fixture.t0)
            try check(try await Fixture.webhooks(in: store, to: endpoint.id).isEmpty, "one failure locks nothing")
            _ = try await store.reserveCodeAttempt(
                issuer: "ck_app", clientUserID: "alice", eventID: nil, limits: limits, now: Fixture.t0 + 1)
            try await checkThrows(.limitReached(retryAfter: 59), "refused while locked") {
                try await store.reserveCodeAttempt(
                    issuer: "ck_app", clientUserID: "alice", eventID: nil, limits: limits, now: Fixture.t0 + 2)
            }
            let sent = try await store.outboxMessages(targets: [endpoint.id], state: nil, limit: 10)
            struct Lock: Decodable {
                struct Data: Decodable {
                    let client_user_id: String
                    let consecutive_failures: Int
                    let locked_until: String
                }
                let type: String
                let data: Data
            }
            let locks = try sent.map { try JSONDecoder().decode(Lock.self, from: $0.payload) }
            try check(
                locks.count == 1 && locks[0].type == "account.locked" && locks[0].data.client_user_id == "alice"
                    && locks[0].data.consecutive_failures == 2, "\(locks.map(\.type))")
        },
        Case(name: "webhooks: deleting an endpoint cancels its queued messages; others keep theirs") { store in
            try await Fixture.apiKey("ck_app", in: store)
            let gone = Fixture.endpoint()
            let kept = Fixture.endpoint()
            try await store.insertWebhookEndpoint(gone)
            try await store.insertWebhookEndpoint(kept)
            try await store.insertPendingEvent(Fixture.event(), maxPending: 5, now: Fixture.t0)
            try await store.deleteWebhookEndpoint(id: gone.id, now: Fixture.t0 + 1)
            let cancelled = try await store.outboxMessages(targets: [gone.id], state: nil, limit: 10)
            try check(
                cancelled.count == 1
                    && cancelled.allSatisfy { $0.state == .cancelled && $0.finishedAt == Fixture.t0 + 1 },
                "cancelled: \(cancelled.map(\.state))")
            try check(
                try await store.outboxMessages(targets: [kept.id], state: .queued, limit: 10).count == 1,
                "the other endpoint's message waits")
            try check(
                try await store.claimOutboxMessages(limit: 10, lease: 30, claim: "c", now: Fixture.t0 + 2).map(
                    \.message.target) == [kept.id], "a cancelled message is never claimed")
        },
        Case(name: "webhooks: failures count from the first; three days of them disable; a delivery clears them") {
            store in
            try await Fixture.apiKey("ck_app", in: store)
            let endpoint = Fixture.endpoint()
            try await store.insertWebhookEndpoint(endpoint)
            let first = Fixture.t0
            try check(
                try await store.recordWebhookAttempt(
                    endpointID: endpoint.id, delivered: false, reason: "503", now: first)
                    == .failing(since: first), "the first failure")
            try check(
                try await store.recordWebhookAttempt(
                    endpointID: endpoint.id, delivered: false, reason: "503", now: first + 3600)
                    == .failing(since: first), "counted from the first")
            try check(
                try await store.recordWebhookAttempt(
                    endpointID: endpoint.id, delivered: true, reason: "", now: first + 7200)
                    == .healthy, "a delivery")
            try check(try await store.webhookEndpoint(id: endpoint.id)?.failingSince == nil, "clears the failures")
            _ = try await store.recordWebhookAttempt(
                endpointID: endpoint.id, delivered: false, reason: "503", now: first + 10_000)
            let late = first + 10_000 + WebhookHealth.disableAfter
            guard
                case .disabled = try await store.recordWebhookAttempt(
                    endpointID: endpoint.id, delivered: false, reason: "the endpoint answered 503", now: late)
            else { throw ConformanceFailure(message: "three days of failures disable", location: #fileID) }
            let disabled = try await store.webhookEndpoint(id: endpoint.id)
            try check(
                disabled?.disabledAt == late && disabled?.disabledReason?.contains("answered 503") == true,
                "disabled, with why: \(String(describing: disabled?.disabledReason))")
            try await store.insertPendingEvent(Fixture.event(), maxPending: 5, now: late)
            try check(
                try await store.outboxMessages(targets: [endpoint.id], state: nil, limit: 10).isEmpty,
                "a disabled endpoint is sent nothing new")
            try check(
                try await store.recordWebhookAttempt(endpointID: "wh_none", delivered: true, reason: "", now: late)
                    == nil,
                "an unknown endpoint")
        },
        Case(name: "outbox: a failed message is sent again with its id, for three more days; no other is") { store in
            try await Fixture.apiKey("ck_app", in: store)
            let endpoint = Fixture.endpoint()
            try await store.insertWebhookEndpoint(endpoint)
            try await store.insertPendingEvent(Fixture.event(), maxPending: 5, now: Fixture.t0)
            let claimed = try await store.claimOutboxMessages(limit: 1, lease: 30, claim: "c", now: Fixture.t0)
            let message =
                try claimed.first.map(\.message) ?? { throw ConformanceFailure(message: "none", location: "") }()
            try await checkThrows(.conflict, "resending a queued message") {
                try await store.resendOutboxMessage(id: message.id, now: Fixture.t0)
            }
            try await store.finishOutboxAttempt(
                id: message.id, claim: "c", outcome: .failed(reason: "gave up"), now: Fixture.t0 + 1)
            let later = Fixture.t0 + 86400
            let resent = try await store.resendOutboxMessage(id: message.id, now: later)
            try check(
                resent.id == message.id && resent.state == .queued && resent.nextAttemptAt == later
                    && resent.deliverUntil == later + WebhookNotice.deliveryTime && resent.finishedAt == nil
                    && resent.payload == message.payload,
                "queued again as it was")
            try check(try await store.outboxMessage(id: message.id) == resent, "read back by id")
            try check(
                try await store.claimOutboxMessages(limit: 1, lease: 30, claim: "d", now: later).map(\.message.id)
                    == [message.id], "and claimed again")
            try await checkThrows(.notFound, "an unknown message") {
                try await store.resendOutboxMessage(id: "msg_none", now: later)
            }
            try check(try await store.outboxMessage(id: "msg_none") == nil, "none by an unknown id")
        },
    ]
}

extension Fixture {
    static func apiKey(_ id: String, in store: any CountersignStore) async throws {
        try await store.insertAPIKey(
            APIKey(id: id, name: id, secretDigest: SecretToken.digest(id), createdAt: t0))
    }

    static func endpoint(apiKeyID: String = "ck_app", types: [WebhookType] = []) -> WebhookEndpoint {
        WebhookEndpoint(
            apiKeyID: apiKeyID, url: "https://hooks.example/\(SecretToken.generate(bytes: 4))", types: types,
            secret: WebhookSecret.generate(), createdAt: t0)
    }

    /// The webhook messages to an endpoint, oldest first: each one's type,
    /// and the id of the event (for a fraud report, the reported one) or
    /// device it is about.
    static func webhooks(in store: any CountersignStore, to endpointID: String) async throws
        -> [(type: String, subject: String, at: Date)]
    {
        struct Body: Decodable {
            struct Data: Decodable {
                struct Event: Decodable { let ID: String }
                let ID: String?
                let reported: Event?
                let device_id: String?
            }
            let type: String
            let data: Data
        }
        return try await store.outboxMessages(targets: [endpointID], state: nil, limit: 100).reversed().map {
            let body = try JSONDecoder().decode(Body.self, from: $0.payload)
            return (body.type, body.data.ID ?? body.data.reported?.ID ?? body.data.device_id ?? "", $0.createdAt)
        }
    }
}
