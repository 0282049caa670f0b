import CountersignClient
import CountersignCore
import Foundation

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
