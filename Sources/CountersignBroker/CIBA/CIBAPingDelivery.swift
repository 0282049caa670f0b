import CountersignCore
import CountersignSenders
import CountersignStore
import Foundation

/// One attempt at a CIBA ping: to the endpoint the client was registered
/// with when it asked, with the token it sent then.
struct CIBAPingDelivery {
    let environment: BrokerEnvironment
    let sender: CIBANotificationSender

    func attempt(_ message: OutboxMessage) async throws -> OutboxOutcome {
        guard let request = try await environment.store.cibaRequest(eventID: message.target),
            let endpoint = request.notificationEndpoint, let token = request.notificationToken
        else { return .cancelled(reason: "the CIBA request is gone") }
        switch await sender.send(body: message.payload, to: endpoint, token: token) {
        case .delivered:
            return .delivered
        case .refused(let reason):
            return .failed(reason: reason)
        case .retry(let reason, let retryAfter):
            return message.afterFailedAttempt(reason: reason, retryAfter: retryAfter, now: environment.now())
        }
    }
}
