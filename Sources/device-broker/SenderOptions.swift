public import ArgumentParser
import CountersignBroker
public import CountersignSenders
import Foundation

/// Where one-time codes go, for `serve`.
struct SenderOptions: ParsableArguments {
    @Option(help: "Where one-time codes go: development (log and <data-dir>/outbox.jsonl), smtp or webhook.")
    var sender: SenderKind = .development

    @Option(help: "Where codes for phone numbers go, if not to --sender: development or webhook.")
    var phoneSender: SenderKind?

    @Option(help: "With a webhook sender: the https URL codes are POSTed to, signed with HMAC-SHA256.")
    var webhookURL: String?

    @Option(help: "With a webhook sender: a file holding the HMAC secret (at least 32 bytes).")
    var webhookSecretFile: String?

    @Option(help: "With --sender smtp: the mail server's host name.")
    var smtpHost: String?

    @Option(help: "With --sender smtp: its port (default 587 with starttls, 465 with tls, 25 with none).")
    var smtpPort: Int?

    @Option(help: "With --sender smtp: starttls (refuses a server without it), tls (from the first byte), or none.")
    var smtpSecurity: SMTPSecurity = .startTLS

    @Option(help: "With --sender smtp: the user name to log in with (AUTH PLAIN or LOGIN, over TLS only).")
    var smtpUsername: String?

    @Option(help: "With --sender smtp: a file holding the password for --smtp-username.")
    var smtpPasswordFile: String?

    @Option(help: "With --sender smtp: the address the mail comes from.")
    var smtpFrom: String?

    @Option(help: "With --sender smtp: the name shown with that address.")
    var smtpFromName: String?

    @Option(help: "With --sender smtp: a PEM file of CA certificates to trust instead of the system's.")
    var smtpCAFile: String?

    @Option(help: "With --sender smtp: the name this host gives in EHLO (default: its host name).")
    var smtpHelo: String?

    enum SenderKind: String, ExpressibleByArgument, CaseIterable {
        case development, smtp, webhook
    }

    func validate() throws {
        let kinds = [sender] + (phoneSender.map { [$0] } ?? [])
        if kinds.contains(.webhook), webhookURL == nil || webhookSecretFile == nil {
            throw ValidationError("a webhook sender needs --webhook-url and --webhook-secret-file")
        }
        if phoneSender == .smtp { throw ValidationError("--phone-sender cannot be smtp: mail servers do not text") }
        if sender == .smtp {
            guard smtpHost != nil, smtpFrom != nil else {
                throw ValidationError("--sender smtp needs --smtp-host and --smtp-from")
            }
        }
    }

    /// The sender for email (and for phone numbers unless `phone` is set).
    func configurations() -> (SenderConfiguration, phone: SenderConfiguration?) {
        (configuration(sender), phoneSender.map(configuration))
    }

    private func configuration(_ kind: SenderKind) -> SenderConfiguration {
        switch kind {
        case .development: return .development
        case .webhook: return .webhook(url: webhookURL ?? "", secretFile: webhookSecretFile ?? "")
        case .smtp:
            let defaultPort = [SMTPSecurity.startTLS: 587, .tls: 465, .none: 25][smtpSecurity]!
            let settings = SMTPSettings(
                host: smtpHost ?? "", port: smtpPort ?? defaultPort, security: smtpSecurity, username: smtpUsername,
                from: smtpFrom ?? "", fromName: smtpFromName, trustRootsFile: smtpCAFile,
                heloName: smtpHelo ?? ProcessInfo.processInfo.hostName)
            return .smtp(settings, passwordFile: smtpPasswordFile)
        }
    }
}

extension SMTPSecurity: ExpressibleByArgument {}
