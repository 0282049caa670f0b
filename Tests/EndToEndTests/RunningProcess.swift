import Foundation
import Synchronization

/// A real child process whose output the test reads line by line.
final class RunningProcess: Sendable {
    let process: ChildProcess
    private let output = OutputBuffer()
    let name: String

    /// Starts `executable` (a product of this package) with `arguments`.
    /// With `keepingInputOpen`, standard input stays open for ``send(_:)``.
    init(
        _ executable: String, _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:],
        keepingInputOpen: Bool = false
    ) throws {
        let path =
            executable.hasPrefix("/") ? executable : Binaries.directory.appendingPathComponent(executable).path
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { $1 }
        let input = Pipe()
        self.name = ([executable] + arguments.prefix(1)).joined(separator: " ")
        // The output is read by a thread of its own with blocking reads, not
        // by a pipe's `readabilityHandler`: that handler's dispatch source
        // crashed libdispatch's event loop twice under load (SIGILL in
        // `_dispatch_source_refs_finalize_unregistration`), once after the
        // handler was taken off at the end of the output as its comment
        // advised. A blocked thread per child costs nothing a test notices.
        var ends: [Int32] = [-1, -1]
        // Close-on-exec (pipe2 is not in Swift's Glibc module); the child
        // gets its end by posix_spawn's dup2, which clears the flag.
        guard pipe(&ends) == 0, fcntl(ends[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(ends[1], F_SETFD, FD_CLOEXEC) == 0
        else {
            throw ProcessFailure("cannot make a pipe: \(String(cString: strerror(errno)))")
        }
        let (reading, writing) = (ends[0], ends[1])
        self.input = input.fileHandleForWriting
        do {
            process = try ChildProcess(
                path, arguments, environment: env, input: input.fileHandleForReading.fileDescriptor,
                output: writing)
        } catch {
            close(reading)
            close(writing)
            throw error
        }
        // The child's ends, closed here: the output ends when the child's
        // (and any child of its that kept it) does.
        close(writing)
        try input.fileHandleForReading.close()
        let output = self.output
        Thread.detachNewThread {
            var chunk = [UInt8](repeating: 0, count: 16384)
            while true {
                let count = read(reading, &chunk, chunk.count)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                output.append(Data(chunk[0..<count]))
            }
            close(reading)
        }
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        if !keepingInputOpen { try input.fileHandleForWriting.close() }
    }

    private let input: FileHandle

    /// Writes to the process's standard input (kept open at the start).
    /// To a process that has already exited it writes nothing (Foundation's
    /// `write(_:)` traps on the broken pipe, taking the whole suite down);
    /// the caller's next wait on the process tells what happened.
    func send(_ text: String) {
        try? input.write(contentsOf: Data(text.utf8))
    }

    /// Everything printed so far (standard output and error together).
    var text: String { output.text }

    /// The JSON document the command printed, without the log lines around
    /// it: the two streams share one pipe, and a command on a busy machine
    /// may log (say, that it waits for PostgreSQL) before its answer. From
    /// the first line that opens an object or array to the last that closes
    /// one.
    var json: Data {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let first = lines.firstIndex(where: { $0.hasPrefix("{") || $0.hasPrefix("[") }),
            let last = lines.lastIndex(where: { $0.hasSuffix("}") || $0.hasSuffix("]") }), last >= first
        else { return Data(text.utf8) }
        return Data(lines[first...last].joined(separator: "\n").utf8)
    }

    /// Waits for a line matching `pattern` and returns its first capture group.
    func waitFor(_ pattern: String, timeout: Duration = .seconds(20)) async throws -> String {
        let regex = try Regex<AnyRegexOutput>(pattern)
        var patience = WaitBudget(timeout)
        while patience.left() {
            if let match = text.firstMatch(of: regex) {
                return match.output.count > 1
                    ? String(match.output[1].substring ?? "") : String(match.output[0].substring ?? "")
            }
            if !process.isRunning, text.firstMatch(of: regex) == nil {
                throw ProcessFailure(
                    "\(name) exited (\(process.terminationStatus)) without printing /\(pattern)/:\n\(text)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ProcessFailure("\(name) did not print /\(pattern)/ in \(timeout):\n\(text)")
    }

    /// Waits for the process to exit and returns its status.
    @discardableResult
    func exitCode(timeout: Duration = .seconds(90)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                process.terminate()
                throw ProcessFailure("\(name) did not exit in \(timeout):\n\(text)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        // Let the last output arrive.
        try await Task.sleep(for: .milliseconds(50))
        return process.terminationStatus
    }

    /// SIGTERM, then SIGKILL if it is still running after 5 s.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date() + 5
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// SIGKILL at once, for a process the test no longer needs.
    func killNow() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { if process.isRunning { process.terminate() } }
}

/// Output collected from a pipe's reading thread.
final class OutputBuffer: Sendable {
    private let content = Mutex("")
    func append(_ data: Data) { content.withLock { $0 += String(decoding: data, as: UTF8.self) } }
    var text: String { content.withLock { $0 } }
}

struct ProcessFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Where `swift build` put this package's executables.
enum Binaries {
    static let directory: URL = {
        if let explicit = ProcessInfo.processInfo.environment["COUNTERSIGN_BIN_DIR"] {
            return URL(fileURLWithPath: explicit)
        }
        // The test bundle lives in the same build directory as the executables.
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("device-broker").path) {
                return url
            }
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug")
    }()
}

/// The repository's scripts/ directory (test helpers in other languages).
let scriptsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("scripts")

/// A fresh temporary directory.
func temporaryDirectory(_ name: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Whether process `pid` holds the socket listening on `port` (Linux, from
/// /proc): a free port handed to two tests at once is bound by one of them
/// only, and the other must not take that server for its own.
/// A file under /proc, read to its end. Foundation's `String(contentsOfFile:)`
/// reads such a file (whose size says 0) in one read of 4 KB: of
/// /proc/net/tcp on a machine with more than a few dozen sockets, only the
/// first lines, which made a broker that was up look as if it never bound.
func procFile(_ path: String) -> String? {
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(descriptor, &chunk, chunk.count)
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { return count == 0 ? String(decoding: bytes, as: UTF8.self) : nil }
        bytes.append(contentsOf: chunk[0..<count])
    }
}

func listens(pid: Int32, port: Int) -> Bool {
    let hexPort = ":" + String(format: "%04X", port)
    var inodes: Set<String> = []
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        guard let text = procFile(table) else { continue }
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            // local address, state 0A (LISTEN), inode
            if fields.count > 9, fields[1].hasSuffix(hexPort), fields[3] == "0A" { inodes.insert(String(fields[9])) }
        }
    }
    guard !inodes.isEmpty, let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else {
        return false
    }
    return fds.contains { fd in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)") else {
            return false
        }
        return inodes.contains { target == "socket:[\($0)]" }
    }
}

/// A TCP port (or with `SOCK_DGRAM`, a UDP port) nobody listens on right now.
func freePort(_ type: __socket_type = SOCK_STREAM) throws -> Int {
    let socketFD = socket(AF_INET, Int32(type.rawValue), 0)
    defer { close(socketFD) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(socketFD, $0, length) == 0 && getsockname(socketFD, $0, &length) == 0
        }
    }
    guard bound else { throw ProcessFailure("no free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// How long a test waits for something outside it, counted only while the
/// test itself runs: each look spends what passed since the last, up to 5 s
/// (a look may itself wait that long for an answer). On a machine so busy
/// that the test's own tasks did not run for a minute, the wait goes on and
/// looks again, instead of failing on its first look after the gap.
struct WaitBudget {
    private var remaining: Duration
    private var last = ContinuousClock.now

    init(_ total: Duration) { remaining = total }

    /// Whether to look again; true at least once.
    mutating func left() -> Bool {
        let now = ContinuousClock.now
        remaining -= min(now - last, .seconds(5))
        last = now
        return remaining > .zero
    }
}
