public import Foundation

/// One plain-text email, as the outbox keeps it until the mail server
/// takes it.
public struct MailMessage: Sendable, Equatable, Codable {
    /// The normalized address.
    public var to: String
    public var subject: String
    public var text: String

    public init(to: String, subject: String, text: String) {
        self.to = to
        self.subject = subject
        self.text = text
    }

    /// As an outbox message's payload.
    public var payload: Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Three strings: encoding cannot fail.
        return (try? encoder.encode(self)) ?? Data()
    }

    /// Read back from an outbox message's payload.
    public init(payload: Data) throws {
        self = try JSONDecoder().decode(MailMessage.self, from: payload)
    }
}
