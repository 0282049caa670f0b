import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where the broker's log lines go: each line is appended to a buffer in
/// memory, and a thread of its own writes what has gathered in one
/// `write(2)`, a few milliseconds after the first line of a batch.
///
/// swift-log's `StreamLogHandler` wrote and flushed every line on the
/// thread that logged it (a `write` per line, and a `stat` of
/// /etc/localtime for its time stamp), on the event loop that serves the
/// request: with its string formatting, the access log line cost about
/// 55 µs, 45 % of an empty request (docs/benchmarks.md).
///
/// Nothing is dropped: a buffer past ``limit`` (the output blocked, a
/// log reader gone slow) is written by the line that filled it, which waits
/// as a direct write would. Lines at `error` and above are written before
/// their call returns, with everything before them, and the rest at exit
/// (``flush()``, also run by `atexit`). A crash loses at most the last few
/// milliseconds of lines below `error`.
public final class LogOutput: Sendable {
    /// The process's standard output.
    public static let standardOutput = LogOutput(descriptor: STDOUT_FILENO)

    /// How long the writer lets lines gather after the first of a batch.
    static let gathering: UInt32 = 5_000  // µs

    /// Bytes held before a logging thread writes them itself.
    static let limit = 1 << 20

    private let descriptor: Int32
    /// Lines not yet taken by a write.
    private let pending = Mutex<[UInt8]>([])
    /// Held while a batch is written, so that batches keep their order;
    /// keeps the emptied buffer of the last batch for the next.
    private let writing = Mutex<[UInt8]>([])
    private let wake = DispatchSemaphore(value: 0)

    init(descriptor: Int32) {
        self.descriptor = descriptor
        let thread = Thread { [self] in
            while true {
                wake.wait()
                usleep(Self.gathering)
                drain()
            }
        }
        thread.name = "log output"
        thread.start()
        if descriptor == STDOUT_FILENO { atexit { LogOutput.standardOutput.flush() } }
    }

    /// Appends a whole line (its final line break included); `urgent`
    /// writes it, and all before it, before returning.
    func append(_ line: [UInt8], urgent: Bool = false) {
        let (first, full) = pending.withLock { pending in
            let first = pending.isEmpty
            pending.append(contentsOf: line)
            return (first, pending.count >= Self.limit)
        }
        if urgent || full {
            drain()
        } else if first {
            wake.signal()
        }
    }

    /// Writes every line appended so far.
    public func flush() { drain() }

    private func drain() {
        writing.withLock { batch in
            pending.withLock { swap(&$0, &batch) }
            guard !batch.isEmpty else { return }
            batch.withUnsafeBytes { write(all: $0) }
            batch.removeAll(keepingCapacity: batch.capacity <= Self.limit)
        }
    }

    private func write(all bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0, errno == EINTR {
                continue
            } else if written < 0, errno == EAGAIN {
                var poll = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                _ = Glibc.poll(&poll, 1, 1000)
            } else {
                // Nowhere to write (a closed pipe): the lines are dropped,
                // as a failed write of StreamLogHandler's was.
                return
            }
        }
    }
}

/// The time stamps of log lines, formatted once a second.
final class LogTimeStamps: Sendable {
    private struct Cached {
        var second = Int.min
        var text: [UInt8] = []
    }

    private let cached = Mutex(Cached())
    private let format: @Sendable (_ second: Int) -> [UInt8]

    /// Local time with its offset, as swift-log's `StreamLogHandler` wrote
    /// it: `2026-11-29T10:43:27+0000`.
    static let local = LogTimeStamps { second in
        var time = time_t(second)
        var parts = tm()
        localtime_r(&time, &parts)
        return strftime(parts, "%Y-%m-%dT%H:%M:%S%z")
    }

    /// UTC to the second, without its zone: `2026-11-29T10:43:27`.
    static let utc = LogTimeStamps { second in
        var time = time_t(second)
        var parts = tm()
        gmtime_r(&time, &parts)
        return strftime(parts, "%Y-%m-%dT%H:%M:%S")
    }

    private init(format: @escaping @Sendable (_ second: Int) -> [UInt8]) { self.format = format }

    /// Appends the stamp of `second` to `line`.
    func append(second: Int, to line: inout [UInt8]) {
        cached.withLock { cached in
            if cached.second != second {
                cached.text = format(second)
                cached.second = second
            }
            line.append(contentsOf: cached.text)
        }
    }

    private static func strftime(_ parts: tm, _ format: String) -> [UInt8] {
        var parts = parts
        var buffer = [CChar](repeating: 0, count: 64)
        let count = Glibc.strftime(&buffer, buffer.count, format, &parts)
        return buffer.prefix(count).map { UInt8(bitPattern: $0) }
    }

    /// The wall clock, in whole seconds and milliseconds.
    static func now() -> (second: Int, millisecond: Int) {
        let now = Date().timeIntervalSince1970
        let second = now.rounded(.down)
        return (Int(second), min(999, Int((now - second) * 1000)))
    }
}
