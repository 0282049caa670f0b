import Foundation
import Synchronization

/// The system log's socket, /dev/log, served by the test process: what
/// the PAM module and its helper write with syslog(3) arrives here, as it
/// would at rsyslog or journald. One per test process; tests find their own
/// lines by event id or user.
final class SyslogReceiver: Sendable {
    static let path = "/dev/log"
    private static let shared = Mutex<SyslogReceiver?>(nil)

    /// The receiver, bound on first use. Fails loudly when a syslog daemon
    /// already serves /dev/log: its lines would go there instead.
    static func start() throws -> SyslogReceiver {
        try shared.withLock { receiver in
            if let receiver { return receiver }
            let started = try SyslogReceiver()
            receiver = started
            return started
        }
    }

    private let socketFD: Int32
    private let lines = Mutex<[String]>([])

    private init() throws {
        if FileManager.default.fileExists(atPath: Self.path) {
            guard !Self.answers(Self.path) else {
                throw ProcessFailure(
                    "a syslog daemon serves \(Self.path): the PAM tests read the authentication log there themselves")
            }
            // Left by an earlier test process: nobody reads it.
            unlink(Self.path)
        }
        socketFD = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard socketFD >= 0, Self.withAddress(Self.path, { bind(socketFD, $0, $1) }) == 0 else {
            throw ProcessFailure("cannot bind \(Self.path): \(String(cString: strerror(errno)))")
        }
        chmod(Self.path, 0o666)
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 8192)
            while true {
                let count = recv(socketFD, &buffer, buffer.count, 0)
                // An empty datagram is a message too; only a broken socket ends this.
                if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                guard count >= 0 else { return }
                let line = String(decoding: buffer[..<count], as: UTF8.self)
                lines.withLock { $0.append(line) }
            }
        }
    }

    /// Waits for a line containing every one of `parts` and returns it: as
    /// syslog(3) sends it, "<PRI>timestamp tag[pid]: message".
    func waitFor(_ parts: String..., timeout: Duration = .seconds(60)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = lines.withLock({ $0.first { line in parts.allSatisfy(line.contains) } }) { return line }
            try await Task.sleep(for: .milliseconds(50))
        }
        let held = lines.withLock { $0.suffix(20).joined(separator: "\n") }
        throw ProcessFailure("no line with \(parts) in the system log within \(timeout); its last lines:\n\(held)")
    }

    /// The facility of a line's priority: 10 is authpriv.
    static func facility(of line: String) -> Int? {
        guard line.hasPrefix("<"), let end = line.firstIndex(of: ">"),
            let priority = Int(line[line.index(after: line.startIndex)..<end])
        else { return nil }
        return priority / 8
    }

    /// Whether something serves the socket, as a datagram or a stream one.
    private static func answers(_ path: String) -> Bool {
        [SOCK_DGRAM, SOCK_STREAM].contains { type in
            let probe = socket(AF_UNIX, Int32(type.rawValue), 0)
            defer { close(probe) }
            return withAddress(path) { connect(probe, $0, $1) } == 0
        }
    }

    private static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8.prefix(raw.count - 1))
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
