import CountersignCore
import CountersignSenders
import CountersignStore
import Foundation

/// One attempt at an invitation's mail: to the mail server codes go to.
/// A server that is away is tried again with the webhooks' back-off until
/// the link expires; one that refuses the address (5xx) is not.
struct MailDelivery {
    let environment: BrokerEnvironment

    func attempt(_ message: OutboxMessage) async throws -> OutboxOutcome {
        guard let sender = environment.mailSender else {
            return .failed(reason: "this broker sends no email: start it with --sender smtp")
        }
        guard let record = try await environment.store.invitation(id: message.target),
            record.invitation.withdrawnAt == nil
        else { return .cancelled(reason: "the invitation was withdrawn") }
        let mail: MailMessage
        do {
            mail = try MailMessage(payload: message.payload)
        } catch {
            return .failed(reason: "the stored mail cannot be read: \(error)")
        }
        do {
            try await sender.send(mail: mail)
            return .delivered
        } catch let refused as MailRefused {
            return .failed(reason: refused.description)
        } catch {
            return message.afterFailedAttempt(reason: "\(error)", now: environment.now())
        }
    }
}
