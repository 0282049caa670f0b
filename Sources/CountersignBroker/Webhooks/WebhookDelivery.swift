import CountersignCore
import CountersignSenders
import CountersignStore
import Foundation

/// One attempt at a webhook message: to its endpoint as the endpoint is
/// now (its URL and secrets may have changed since the message was
/// written), with the same `webhook-id` every time. The endpoint's health
/// is recorded with each attempt; an endpoint failing for too long is
/// disabled (``WebhookHealth``).
struct WebhookDelivery {
    let environment: BrokerEnvironment
    let sender: StandardWebhookSender

    func attempt(_ message: OutboxMessage) async throws -> OutboxOutcome {
        guard let endpoint = try await environment.store.webhookEndpoint(id: message.target) else {
            return .cancelled(reason: "the endpoint was deleted")
        }
        if let disabledAt = endpoint.disabledAt {
            return .failed(
                reason: "the endpoint is disabled since \(disabledAt.formatted(.iso8601)): "
                    + (endpoint.disabledReason ?? "by hand"))
        }
        let now = environment.now()
        let result = await sender.send(id: message.id, body: message.payload, to: endpoint, now: now)
        switch result {
        case .delivered:
            try await environment.store.recordWebhookAttempt(
                endpointID: endpoint.id, delivered: true, reason: "", now: environment.now())
            return .delivered
        case .refused(let reason):
            try await environment.store.recordWebhookAttempt(
                endpointID: endpoint.id, delivered: false, reason: reason, now: environment.now())
            return .failed(reason: reason)
        case .retry(let reason, let retryAfter):
            let health = try await environment.store.recordWebhookAttempt(
                endpointID: endpoint.id, delivered: false, reason: reason, now: environment.now())
            if case .disabled(let why) = health { return .failed(reason: "the endpoint was disabled: \(why)") }
            return message.afterFailedAttempt(reason: reason, retryAfter: retryAfter, now: environment.now())
        }
    }
}
