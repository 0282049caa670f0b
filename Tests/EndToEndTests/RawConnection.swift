import Foundation

/// A blocking loopback TCP connection with a receive timeout, from any
/// loopback address (127.0.0.0/8 are all this machine's): a test plays
/// several clients by their addresses.
final class RawConnection {
    let socketFD: Int32

    init(port: Int, from source: String = "127.0.0.1", receiveTimeout: Int = 10) throws {
        // The descriptor becomes the object's only once connected: a
        // throwing initializer of a fully initialized object runs deinit,
        // which would close the number again, by then perhaps another
        // test's socket.
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(socketFD, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &local) { local in
            withUnsafePointer(to: &address) { address in
                local.withMemoryRebound(to: sockaddr.self, capacity: 1) { local in
                    address.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                        bind(socketFD, local, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                            && connect(socketFD, address, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                    }
                }
            }
        }
        guard connected else {
            let failure = errno
            close(socketFD)
            throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .ECONNREFUSED)
        }
        self.socketFD = socketFD
    }

    deinit { close(socketFD) }

    /// How long a read waits for more.
    func setReceiveTimeout(_ seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(socketFD, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends `text`; false once the server has closed the connection.
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(socketFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            == bytes.count
    }

    /// Everything until the server closes the connection (or the timeout).
    func readToEnd() -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socketFD, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += buffer[..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// How a read ended.
    enum Ending: Equatable {
        /// The server closed the connection (an orderly close or a reset),
        /// after sending these bytes.
        case closed(String)
        /// Nothing more came within the receive timeout; the connection is open.
        case stillOpen(String)
    }

    /// One response: its head and a body of its Content-Length, or what
    /// came before the server closed or the receive timeout passed.
    func readResponse() -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let text = String(decoding: received, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let length =
                    text[..<end.lowerBound].split(separator: "\r\n")
                    .first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if text[end.upperBound...].utf8.count >= length { return text }
            }
            let count = buffer.withUnsafeMutableBytes { recv(socketFD, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return text }
            received += buffer[..<count]
        }
    }

    /// Reads until the server closes the connection or the receive timeout passes.
    func readUntilClosed() -> Ending {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socketFD, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += buffer[..<count]
                continue
            }
            // A signal (a child process of the test ending) interrupts a
            // receive with a timeout; that is not the server closing.
            if count < 0, errno == EINTR { continue }
            let text = String(decoding: received, as: UTF8.self)
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { return .stillOpen(text) }
            return .closed(text)
        }
    }
}

/// A loopback TCP socket that listens, to see the bytes a client sends.
final class RawListener: Sendable {
    private let socket: ListeningSocket
    var port: Int { socket.port }

    init() throws { socket = try ListeningSocket() }

    /// The head of the first request on the first connection, answered with
    /// a 503; waits up to a minute for it.
    func firstRequestHead() async throws -> String {
        let fd = socket.socketFD
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 60_000) == 1 else {
                    return continuation.resume(throwing: ProcessFailure("nobody connected within a minute"))
                }
                let client = accept(fd, nil, nil)
                defer { close(client) }
                var timeout = timeval(tv_sec: 30, tv_usec: 0)
                setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !String(decoding: received, as: UTF8.self).contains("\r\n\r\n") {
                    let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                    guard count > 0 else { break }
                    received += buffer[..<count]
                }
                let answer = Array(
                    "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".utf8)
                _ = answer.withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                continuation.resume(returning: String(decoding: received, as: UTF8.self))
            }
        }
    }
}
