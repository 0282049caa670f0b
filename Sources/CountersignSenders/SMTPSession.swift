import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// One reply of an SMTP server (RFC 5321 §4.2): a 3-digit code and one
/// text line per reply line.
struct SMTPReply: Sendable, CustomStringConvertible {
    let code: Int
    let lines: [String]

    var description: String { "\(code) \(lines.joined(separator: " / "))" }

    /// The EHLO keywords the server announced, upper-cased, with their parameters.
    var extensions: [String: [String]] {
        var result: [String: [String]] = [:]
        for line in lines.dropFirst() {
            let words = line.split(separator: " ").map(String.init)
            guard let keyword = words.first else { continue }
            result[keyword.uppercased()] = Array(words.dropFirst())
        }
        return result
    }
}

/// Splits the byte stream into replies, joining multi-line ones
/// (`250-first`, `250 last`).
struct SMTPReplyDecoder: ByteToMessageDecoder {
    typealias InboundOut = SMTPReply

    /// Set while the client waits for the answer to STARTTLS: anything the
    /// server sends after it in the clear is an injection attempt.
    let startTLSGuard: StartTLSGuard
    private var pending: [String] = []

    init(startTLSGuard: StartTLSGuard) { self.startTLSGuard = startTLSGuard }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            guard buffer.readableBytes <= 4096 else { throw SMTPFailure("the mail server sent an over-long line") }
            return .needMoreData
        }
        var bytes = buffer.readBytes(length: newline - buffer.readerIndex + 1)!
        bytes.removeLast()
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        guard bytes.count >= 3, bytes[0..<3].allSatisfy({ (0x30...0x39).contains($0) }),
            bytes.count == 3 || bytes[3] == UInt8(ascii: " ") || bytes[3] == UInt8(ascii: "-")
        else { throw SMTPFailure("the mail server does not speak SMTP") }
        let code = Int(String(decoding: bytes[0..<3], as: UTF8.self))!
        pending.append(bytes.count > 4 ? String(decoding: bytes[4...], as: UTF8.self) : "")
        if bytes.count > 3, bytes[3] == UInt8(ascii: "-") {
            guard pending.count < 100 else { throw SMTPFailure("the mail server sent an over-long reply") }
            return .continue
        }
        let reply = SMTPReply(code: code, lines: pending)
        pending = []
        if startTLSGuard.isWaiting, buffer.readableBytes > 0 {
            throw SMTPFailure("the mail server sent data after its STARTTLS answer; refusing the connection")
        }
        context.fireChannelRead(wrapInboundOut(reply))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}

/// Shared between the conversation and the decoder on the event loop.
final class StartTLSGuard: Sendable {
    private let waiting = Atomic(false)
    var isWaiting: Bool { waiting.load(ordering: .acquiring) }
    func set(_ value: Bool) { waiting.store(value, ordering: .releasing) }
}

/// One SMTP connection: connect, greet, secure, authenticate, deliver, quit.
struct SMTPSession {
    let settings: SMTPSettings
    let tls: NIOSSLContext?

    /// Delivers `message` (a complete RFC 5322 message with CRLF line ends)
    /// from `settings.from` to `recipient`.
    func deliver(_ message: String, to recipient: String) async throws {
        let startTLSGuard = StartTLSGuard()
        let implicitTLS = settings.security == .tls ? tls : nil
        let serverName = settings.serverNameForTLS
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: settings.host, port: settings.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let implicitTLS {
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: implicitTLS, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(SMTPReplyDecoder(startTLSGuard: startTLSGuard)))
                    return try NIOAsyncChannel<SMTPReply, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await channel.executeThenClose { inbound, outbound in
            var conversation = Conversation(replies: inbound.makeAsyncIterator(), outbound: outbound)
            try await conversation.expect([220], during: "the greeting")
            var hello = try await conversation.command("EHLO \(settings.heloName)", expecting: 250)
            if settings.security == .startTLS {
                guard hello.extensions["STARTTLS"] != nil else {
                    throw SMTPFailure("the mail server does not offer STARTTLS; refusing to send in the clear")
                }
                startTLSGuard.set(true)
                _ = try await conversation.command("STARTTLS", expecting: 220)
                let tls = self.tls!
                try await channel.channel.eventLoop.submit {
                    try channel.channel.pipeline.syncOperations.addHandler(
                        try NIOSSLClientHandler(context: tls, serverHostname: serverName), position: .first)
                }.get()
                startTLSGuard.set(false)
                hello = try await conversation.command("EHLO \(settings.heloName)", expecting: 250)
            }
            if let username = settings.username, let password = settings.password {
                try await conversation.authenticate(
                    username: username, password: password, offered: hello.extensions["AUTH"] ?? [])
            }
            _ = try await conversation.command("MAIL FROM:<\(settings.from)>", expecting: 250)
            _ = try await conversation.command("RCPT TO:<\(recipient)>", expecting: 250, 251)
            _ = try await conversation.command("DATA", expecting: 354)
            _ = try await conversation.command(Self.dotStuffed(message) + ".", expecting: 250, step: "the message")
            _ = try? await conversation.command("QUIT", expecting: 221)
        }
    }

    /// The DATA section: a line starting with "." gets one more (RFC 5321 §4.5.2).
    static func dotStuffed(_ message: String) -> String {
        var text = message.hasSuffix("\r\n") ? message : message + "\r\n"
        text = text.replacingOccurrences(of: "\r\n.", with: "\r\n..")
        return text.hasPrefix(".") ? "." + text : text
    }

    struct Conversation {
        var replies: NIOAsyncChannelInboundStream<SMTPReply>.AsyncIterator
        let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

        mutating func read() async throws -> SMTPReply {
            guard let reply = try await replies.next() else {
                throw SMTPFailure("the mail server closed the connection")
            }
            return reply
        }

        /// The next reply, which must have one of `codes`; `step` names
        /// what was refused in the error.
        @discardableResult
        mutating func expect(_ codes: [Int], during step: String) async throws -> SMTPReply {
            let reply = try await read()
            guard codes.contains(reply.code) else {
                throw SMTPFailure(
                    "the mail server refused \(step): \(reply)", isPermanent: (500..<600).contains(reply.code))
            }
            return reply
        }

        mutating func command(_ line: String, expecting codes: Int..., step: String? = nil) async throws
            -> SMTPReply
        {
            do {
                try await outbound.write(ByteBuffer(string: line + "\r\n"))
            } catch {
                // The connection failed under the write (a refused TLS
                // handshake, say): its reason is on the inbound side.
                _ = try await replies.next()
                throw error
            }
            // Only the verb: the rest may be a credential or the message.
            return try await expect(codes, during: step ?? String(line.prefix { $0 != " " && $0 != ":" }))
        }

        /// AUTH PLAIN (RFC 4616) if offered, else AUTH LOGIN.
        mutating func authenticate(username: String, password: String, offered: [String]) async throws {
            let mechanisms = Set(offered.map { $0.uppercased() })
            if mechanisms.contains("PLAIN") {
                let token = Data("\0\(username)\0\(password)".utf8).base64EncodedString()
                _ = try await command("AUTH PLAIN \(token)", expecting: 235, step: "the credentials (AUTH PLAIN)")
            } else if mechanisms.contains("LOGIN") {
                _ = try await command("AUTH LOGIN", expecting: 334)
                _ = try await command(Data(username.utf8).base64EncodedString(), expecting: 334, step: "the username")
                _ = try await command(
                    Data(password.utf8).base64EncodedString(), expecting: 235, step: "the credentials (AUTH LOGIN)")
            } else {
                throw SMTPFailure(
                    "the mail server offers no password mechanism this broker speaks (PLAIN, LOGIN): \(offered)")
            }
        }
    }
}

/// The mail server refused, or the conversation broke off. The description
/// carries the server's reply, never a credential or the message.
struct SMTPFailure: Error, CustomStringConvertible {
    let description: String
    /// A 5xx reply (RFC 5321 §4.2.1): the server will not take this mail,
    /// however often it is tried.
    let isPermanent: Bool
    init(_ description: String, isPermanent: Bool = false) {
        self.description = description
        self.isPermanent = isPermanent
    }
}
