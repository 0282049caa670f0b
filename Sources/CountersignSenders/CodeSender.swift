public import CountersignCore
public import Foundation
public import Logging
import Synchronization

/// One one-time code on its way to a person.
public struct CodeMessage: Sendable {
    public var code: String
    /// The normalized email address or phone number.
    public var identifier: String
    public var type: IdentifierType
    /// The app's name, as registered with its API key.
    public var app: String
    /// How long the code stays valid.
    public var lifetime: TimeInterval

    public init(code: String, to identifier: String, type: IdentifierType, app: String, lifetime: TimeInterval) {
        self.code = code
        self.identifier = identifier
        self.type = type
        self.app = app
        self.lifetime = lifetime
    }

    /// The words a person reads, the same on every channel.
    public var text: String {
        "Your \(app) verification code is \(code). It expires in \(Self.duration(lifetime))."
    }

    /// The code as an email.
    public var mail: MailMessage {
        let app = app.filter { !$0.isNewline }
        return MailMessage(
            to: identifier, subject: "Your \(app) verification code",
            text: """
                \(text)

                Type it on the page that asked for it. If you did not ask for a code, \
                you can ignore this message: nobody can use it without this mailbox.
                """)
    }

    public static func duration(_ seconds: TimeInterval) -> String {
        let minutes = Int((seconds / 60).rounded())
        if seconds < 120 || minutes * 60 != Int(seconds) { return "\(Int(seconds)) seconds" }
        return "\(minutes) minutes"
    }
}

/// Delivers one-time codes to an email address or phone number.
public protocol CodeSender: Sendable {
    /// Hands `message` to its channel; returns once the channel accepted it.
    func send(_ message: CodeMessage) async throws
    /// Whether this sender reaches identifiers of `type` (an SMTP server
    /// cannot text a phone).
    func delivers(to type: IdentifierType) -> Bool
}

extension CodeSender {
    public func delivers(to type: IdentifierType) -> Bool { true }
}

/// Sends whole emails (invitations) through the channel codes go by
/// email. A sender that cannot (a webhook for codes) is not one.
public protocol MailSender: Sendable {
    /// Hands `mail` to the mail server; returns once it accepted it.
    /// Throws ``MailRefused`` when it never will.
    func send(mail: MailMessage) async throws
}

/// A mail server's permanent refusal (a 5xx reply): trying again would
/// not help.
public struct MailRefused: Error, CustomStringConvertible {
    public let description: String
}

/// Email to one sender, phone numbers to another.
public struct RoutingSender: CodeSender {
    let email: any CodeSender
    let phone: any CodeSender

    public init(email: any CodeSender, phone: any CodeSender) {
        self.email = email
        self.phone = phone
    }

    func route(_ type: IdentifierType) -> any CodeSender { type == .email ? email : phone }

    public func send(_ message: CodeMessage) async throws { try await route(message.type).send(message) }

    public func delivers(to type: IdentifierType) -> Bool { route(type).delivers(to: type) }

    /// The email sender, if it sends whole mails.
    public var mail: (any MailSender)? { email as? any MailSender }
}

/// The default sender for development: codes and invitations go to the
/// log and, one JSON object per line, to an outbox file (mode 0600) that
/// tests and people read.
public final class DevelopmentSender: CodeSender, MailSender {
    let outbox: URL?
    let logger: Logger
    private let lock = Mutex(())

    public init(outbox: URL?, logger: Logger) {
        self.outbox = outbox
        self.logger = logger
    }

    public func send(_ message: CodeMessage) async throws {
        logger.notice(
            "development sender: verification code",
            metadata: ["to": "\(message.identifier)", "code": "\(message.code)", "app": "\(message.app)"])
        let line: [String: String] = [
            "to": message.identifier, "type": message.type.rawValue, "code": message.code, "app": message.app,
        ]
        try append(line)
    }

    /// Invitations, to the log and the outbox file (`subject`, `text`).
    public func send(mail: MailMessage) async throws {
        logger.notice("development sender: mail", metadata: ["to": "\(mail.to)", "subject": "\(mail.subject)"])
        try append(["to": mail.to, "type": "mail", "subject": mail.subject, "text": mail.text])
    }

    private func append(_ fields: [String: String]) throws {
        guard let outbox else { return }
        var line = fields
        line["sent_at"] = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        var data = try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys])
        data.append(UInt8(ascii: "\n"))
        try lock.withLock { _ in
            if !FileManager.default.fileExists(atPath: outbox.path) {
                _ = FileManager.default.createFile(
                    atPath: outbox.path, contents: nil, attributes: [.posixPermissions: 0o600])
            }
            let handle = try FileHandle(forWritingTo: outbox)
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: data)
        }
    }
}

/// A sender configuration that cannot work (a bad URL, a missing setting):
/// found when the broker starts, before anything is sent.
public struct SenderSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
