import CountersignClient
import CountersignCore
import Foundation
import Synchronization

/// Text from the broker (or anyone behind it), made safe for a terminal:
/// every character that would not be shown as itself (an escape sequence,
/// a line break, a right-to-left override) is written out as `\u{…}`.
/// Whatever a broker sends, the agent never lets it drive the terminal.
func shown(_ text: String) -> String { DisplayText.escaped(text) }

/// Questions to the person at the keyboard. Prompts go to standard error;
/// answers come from standard input, a terminal or a pipe.
enum Prompt {
    /// A secret: not echoed on a terminal; from a pipe, one line.
    static func secret(_ prompt: String) -> String? {
        FileHandle.standardError.write(Data(prompt.utf8))
        guard isatty(STDIN_FILENO) == 1 else { return readLine() }
        var original = termios()
        tcgetattr(STDIN_FILENO, &original)
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &original)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        return readLine()
    }

    /// A new PIN, typed twice on a terminal.
    static func newPIN() throws -> String {
        guard let pin = secret("New PIN or passphrase: "), !pin.isEmpty else { throw AgentFailure("no PIN given") }
        if isatty(STDIN_FILENO) == 1, secret("Type it again: ") != pin {
            throw AgentFailure("the two PINs differ; nothing was changed")
        }
        return pin
    }

    /// The PIN of an account, if its key file has one.
    static func pin(for account: StoredAccount) -> String? {
        account.isPINProtected ? secret("PIN for \(account.clientUserID) on this device: ") : nil
    }
}

extension Prompt {
    /// A line typed after `prompt` (on standard output), blanks trimmed;
    /// nil at the end of input.
    static func line(_ prompt: String) -> String? {
        print(prompt, terminator: "")
        flushOutput()
        return readLine()?.trimmingCharacters(in: .whitespaces)
    }

    /// Asks a yes/no question whose safe answer is no: only "y" or "yes"
    /// is a yes; anything else, or no terminal to ask on, is a no.
    static func confirm(_ question: String) -> Bool {
        guard Console.isInteractive, let reply = line("\(question) [y/N] ")?.lowercased() else { return false }
        return reply == "y" || reply == "yes"
    }
}

/// Lines from standard input, read on a thread of their own, so that a
/// prompt can wait for an answer and for something else at once (the
/// request expiring, or being withdrawn) and stop asking when that comes
/// first.
///
/// While it reads, that thread holds the lock of C's `stdin`: flush
/// `stdout` by name, never with `fflush(nil)`, which takes every stream's
/// lock and would wait for the next line typed.
final class LineReader: Sendable {
    static let standardInput = LineReader()

    private struct State {
        var started = false
        var lines: [(text: String, at: ContinuousClock.Instant)] = []
        var finished = false
        var waiter: CheckedContinuation<Delivery, Never>?
    }
    private enum Delivery {
        case line(String)
        case end
        case cancelled
    }
    private let state = Mutex(State())

    /// The next line typed, blanks trimmed; nil at the end of input.
    /// Throws `CancellationError` when the task is cancelled first. On a
    /// terminal, lines typed before `since` (while nothing was asked) are
    /// dropped; from a pipe every line counts.
    func next(typedAfter since: ContinuousClock.Instant) async throws -> String? {
        start()
        let dropStale = isatty(STDIN_FILENO) == 1
        let delivery = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Delivery, Never>) in
                state.withLock { state in
                    if dropStale { state.lines.removeAll { $0.at < since } }
                    if !state.lines.isEmpty {
                        continuation.resume(returning: .line(state.lines.removeFirst().text))
                    } else if state.finished {
                        continuation.resume(returning: .end)
                    } else if Task.isCancelled {
                        continuation.resume(returning: .cancelled)
                    } else {
                        state.waiter = continuation
                    }
                }
            }
        } onCancel: {
            state.withLock { state in
                state.waiter?.resume(returning: .cancelled)
                state.waiter = nil
            }
        }
        switch delivery {
        case .line(let text): return text.trimmingCharacters(in: .whitespaces)
        case .end: return nil
        case .cancelled: throw CancellationError()
        }
    }

    private func start() {
        let first = state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        Thread.detachNewThread { [self] in
            while let line = readLine() { deliver(.line(line)) }
            deliver(.end)
        }
    }

    private func deliver(_ delivery: Delivery) {
        state.withLock { state in
            if case .end = delivery { state.finished = true }
            if let waiter = state.waiter {
                state.waiter = nil
                waiter.resume(returning: delivery)
            } else if case .line(let text) = delivery {
                state.lines.append((text, .now))
            }
        }
    }
}
