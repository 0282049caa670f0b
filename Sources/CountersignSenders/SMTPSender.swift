public import CountersignCore
import Foundation
import NIOCore
import NIOSSL

/// How the connection to the mail server is protected.
public enum SMTPSecurity: String, Sendable, CaseIterable {
    /// A plain connection upgraded with STARTTLS (RFC 3207), usually port 587.
    /// A server that does not offer STARTTLS is refused, never used in the clear.
    case startTLS = "starttls"
    /// TLS from the first byte (RFC 8314), usually port 465.
    case tls
    /// No encryption, for a relay on the same host; never with a password.
    case none
}

/// Where and how the SMTP sender hands over its mail.
public struct SMTPSettings: Sendable {
    public var host: String
    public var port: Int
    public var security: SMTPSecurity
    /// With ``password``: AUTH PLAIN or LOGIN, only over TLS.
    public var username: String?
    public var password: String?
    /// The envelope and header sender address.
    public var from: String
    /// The display name in the From header.
    public var fromName: String?
    /// A PEM file of the certificates to trust instead of the system's roots.
    public var trustRootsFile: String?
    /// The name this host gives in EHLO.
    public var heloName: String
    /// The longest one delivery may take, connection included.
    public var timeout: Duration

    public init(
        host: String, port: Int, security: SMTPSecurity = .startTLS, username: String? = nil,
        password: String? = nil, from: String, fromName: String? = nil, trustRootsFile: String? = nil,
        heloName: String = "localhost", timeout: Duration = .seconds(30)
    ) {
        self.host = host
        self.port = port
        self.security = security
        self.username = username
        self.password = password
        self.from = from
        self.fromName = fromName
        self.trustRootsFile = trustRootsFile
        self.heloName = heloName
        self.timeout = timeout
    }

    /// The name the certificate must carry; nil for an IP address, whose
    /// certificate is then checked against the address itself.
    var serverNameForTLS: String? { (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil }
}

/// Sends codes and invitations by email over SMTP (RFC 5321), with
/// STARTTLS or implicit TLS and a verified certificate, one connection per
/// message.
public struct SMTPSender: CodeSender, MailSender {
    let settings: SMTPSettings
    let tls: NIOSSLContext?

    /// Checks the settings and loads the trust roots; throws a clear error
    /// for a setting the broker must not start with.
    public init(settings: SMTPSettings) throws {
        guard let from = IdentifierType.email.normalize(settings.from) else {
            throw SenderSetupError("--smtp-from is not an email address: \(settings.from)")
        }
        guard (1...65535).contains(settings.port) else { throw SenderSetupError("the SMTP port must be 1…65535") }
        guard (settings.username == nil) == (settings.password == nil) else {
            throw SenderSetupError(
                "an SMTP username needs a password (--smtp-password-file), and a password a username")
        }
        if settings.security == .none, settings.username != nil {
            throw SenderSetupError("an SMTP password is only sent over TLS: use --smtp-security starttls or tls")
        }
        for value in [settings.host, settings.heloName, settings.username ?? "", settings.fromName ?? ""]
        where value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw SenderSetupError("SMTP settings may not contain control characters")
        }
        var settings = settings
        settings.from = from
        self.settings = settings
        if settings.security == .none {
            tls = nil
        } else {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.minimumTLSVersion = .tlsv12
            if let file = settings.trustRootsFile {
                do {
                    configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(file))
                } catch {
                    throw SenderSetupError("cannot read the SMTP trust roots from \(file): \(error)")
                }
            }
            tls = try NIOSSLContext(configuration: configuration)
        }
    }

    public func delivers(to type: IdentifierType) -> Bool { type == .email }

    public func send(_ message: CodeMessage) async throws {
        guard message.type == .email else { throw SenderFailure("the SMTP sender only sends email") }
        try await send(mail: message.mail)
    }

    public func send(mail: MailMessage) async throws {
        let text = Self.compose(mail, from: settings.from, fromName: settings.fromName, date: Date())
        let session = SMTPSession(settings: settings, tls: tls)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await session.deliver(text, to: mail.to) }
                group.addTask { [timeout = settings.timeout] in
                    try await Task.sleep(for: timeout)
                    throw SMTPFailure("the mail server did not finish within \(timeout)")
                }
                defer { group.cancelAll() }
                try await group.next()
            }
        } catch let failure as SMTPFailure where failure.isPermanent {
            throw MailRefused(description: failure.description)
        }
    }

    /// The message as RFC 5322 text with CRLF line ends (RFC 2045 MIME,
    /// RFC 2047 encoded words for a non-ASCII subject or name).
    static func compose(_ mail: MailMessage, from: String, fromName: String?, date: Date) -> String {
        let domain = from.split(separator: "@").last.map(String.init) ?? "localhost"
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
        let sender = fromName.map { "\(encodedPhrase($0)) <\(from)>" } ?? from
        let body = mail.text
        // 7bit is ASCII in lines of at most 998 octets (RFC 5322 §2.1.1); a
        // long link under a long public URL can pass that.
        let isSevenBit =
            body.unicodeScalars.allSatisfy(\.isASCII)
            && body.split(whereSeparator: \.isNewline).allSatisfy { $0.utf8.count <= 998 }
        let encodedBody =
            isSevenBit
            ? body.replacingOccurrences(of: "\n", with: "\r\n")
            : Data(body.utf8).base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed])
                .replacingOccurrences(of: "\n", with: "\r\n")
        let headers = [
            "Date: \(formatter.string(from: date))",
            "From: \(sender)",
            "To: <\(mail.to)>",
            "Subject: \(encodedText(mail.subject))",
            "Message-ID: <\(SecretToken.generate(bytes: 16))@\(domain)>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: \(isSevenBit ? "7bit" : "base64")",
            "Auto-Submitted: auto-generated",
        ]
        return headers.joined(separator: "\r\n") + "\r\n\r\n" + encodedBody + "\r\n"
    }

    /// Header text as is when it is plain ASCII, else as RFC 2047 encoded
    /// words of at most 75 characters, folded.
    static func encodedText(_ text: String) -> String {
        let clean = text.filter { !$0.isNewline }
        if isPrintableASCII(clean) { return clean }
        var words: [String] = []
        var chunk = ""
        for character in clean {
            if chunk.utf8.count + character.utf8.count > 45 {
                words.append(chunk)
                chunk = ""
            }
            chunk.append(character)
        }
        words.append(chunk)
        return words.map { "=?UTF-8?B?\(Data($0.utf8).base64EncodedString())?=" }.joined(separator: "\r\n ")
    }

    /// A display name: quoted when ASCII, encoded words otherwise.
    static func encodedPhrase(_ name: String) -> String {
        let clean = name.filter { !$0.isNewline }
        guard isPrintableASCII(clean) else { return encodedText(clean) }
        return "\"" + clean.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            + "\""
    }

    static func isPrintableASCII(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0.isASCII && $0.value >= 32 }
    }
}
