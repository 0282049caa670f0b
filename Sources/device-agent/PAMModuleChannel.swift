import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation
import Synchronization

/// The helper's side of the module's socket: lines out on standard output,
/// lines in from standard input, read by a thread of their own.
final class PAMModuleChannel: Sendable {
    enum Reply: Equatable {
        case answer(String)
        case cancelled
    }

    private struct State {
        var lines: [String] = []
        var closed = false
        var lineWaiter: CheckedContinuation<String?, Never>?
        var endWaiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Mutex(State())

    init() {
        Thread.detachNewThread { [self] in
            while let line = readLine(strippingNewline: true) { received(line) }
            close()
        }
    }

    private func received(_ line: String) {
        let waiter = state.withLock { state -> CheckedContinuation<String?, Never>? in
            if let waiter = state.lineWaiter {
                state.lineWaiter = nil
                return waiter
            }
            state.lines.append(line)
            return nil
        }
        waiter?.resume(returning: line)
    }

    private func close() {
        let (lineWaiter, endWaiters) = state.withLock { state in
            state.closed = true
            defer {
                state.lineWaiter = nil
                state.endWaiters = [:]
            }
            return (state.lineWaiter, Array(state.endWaiters.values))
        }
        lineWaiter?.resume(returning: nil)
        for waiter in endWaiters { waiter.resume() }
    }

    private func nextLine() async -> String? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> String?? in
                if !state.lines.isEmpty { return .some(state.lines.removeFirst()) }
                if state.closed { return .some(nil) }
                state.lineWaiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Returns once the module closed its end (the login went away), or
    /// the task is cancelled.
    func ended() async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.closed || Task.isCancelled { return true }
                    state.endWaiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.endWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Sends one line; once the module has gone away (the login was
    /// abandoned, or the module gave up waiting and closed its end), the
    /// line is dropped: the outcome no longer reaches anyone.
    func send(_ line: String) {
        // One line each: nothing the broker sent may start another.
        let clean = String(line.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? " " : Character($0) })
        // The throwing write: the old one stops the process on EPIPE.
        do {
            try FileHandle.standardOutput.write(contentsOf: Data((clean + "\n").utf8))
        } catch {
            close()
        }
    }

    func error(_ text: String) { send("error " + text) }

    /// Asks the person; `cancelled` when the conversation failed or the module went away.
    func ask(_ prompt: String) async -> Reply {
        send("prompt " + prompt)
        guard let line = await nextLine() else { return .cancelled }
        if line.hasPrefix("answer ") { return .answer(String(line.dropFirst("answer ".count))) }
        if line == "answer" { return .answer("") }
        return .cancelled
    }
}

/// The authentication log (syslog's auth facility, private part).
struct AuthLog: Sendable {
    init() {
        // openlog keeps the pointer: a string that is never freed.
        openlog(strdup("countersign-pam"), LOG_PID, LOG_AUTHPRIV)
    }

    func write(_ priority: Int32, _ message: String) {
        // A C string: a Swift String passed as a variadic argument reaches
        // "%s" as an object pointer and logs garbage.
        message.withCString { text in withVaList([text]) { vsyslog(priority, "%s", $0) } }
    }
}
