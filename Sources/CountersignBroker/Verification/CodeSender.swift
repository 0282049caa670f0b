public import CountersignCore
public import Foundation
public import Logging
import Synchronization

/// Delivers one-time codes to an email address or phone number.
public protocol CodeSender: Sendable {
    /// Sends `code` to `identifier`; `app` is the app's name, for the message.
    func send(code: String, to identifier: String, type: IdentifierType, app: String) async throws
}

/// The default sender for development: codes go to the log and, one JSON
/// object per line, to an outbox file (mode 0600) that tests and people read.
public final class DevelopmentSender: CodeSender {
    let outbox: URL?
    let logger: Logger
    private let lock = Mutex(())

    public init(outbox: URL?, logger: Logger) {
        self.outbox = outbox
        self.logger = logger
    }

    public func send(code: String, to identifier: String, type: IdentifierType, app: String) async throws {
        logger.notice(
            "development sender: verification code",
            metadata: ["to": "\(identifier)", "code": "\(code)", "app": "\(app)"])
        guard let outbox else { return }
        let line: [String: String] = [
            "to": identifier, "type": type.rawValue, "code": code, "app": app,
            "sent_at": Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)),
        ]
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
