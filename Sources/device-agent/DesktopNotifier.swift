import CountersignCore
import Foundation
import Synchronization

/// Raises desktop notifications: through the freedesktop notification
/// service (org.freedesktop.Notifications on the session bus, with GLib's
/// `gdbus`, or libnotify's `notify-send`) on Linux and other Unix desktops,
/// through Notification Center (`osascript`) on macOS, and elsewhere by
/// ringing the terminal's bell. A notification that cannot be shown costs
/// a warning once, never the watch.
final class DesktopNotifier: Sendable {
    /// How long a notification stays, in milliseconds, if the server lets it expire.
    static let timeout = 60_000

    /// The helpers that failed once already (warned about once).
    private let warned = Mutex<Set<String>>([])

    /// Shows one notification; `title` and `body` are plain text.
    func notify(title: String, body: String) async {
        #if os(macOS)
            let script =
                "display notification \(Self.appleScriptString(body)) with title \(Self.appleScriptString(title))"
            await run(["osascript", "-e", script])
        #else
            // A server may read the body as its markup subset: escape it.
            let escaped = Self.markupEscaped(body)
            if await run([
                "gdbus", "call", "--session", "--dest", "org.freedesktop.Notifications", "--object-path",
                "/org/freedesktop/Notifications", "--method", "org.freedesktop.Notifications.Notify", "'Countersign'",
                "uint32 0", "'dialog-password'", Self.variantString(title), Self.variantString(escaped), "@as []",
                "{'urgency': <byte 2>}", "int32 \(Self.timeout)",
            ]) {
                return
            }
            if await run(["notify-send", "--urgency=critical", "--app-name=Countersign", title, escaped]) { return }
            FileHandle.standardError.write(Data("\u{07}".utf8))
        #endif
    }

    /// Runs a helper program, quietly; whether it succeeded.
    @discardableResult
    private func run(_ arguments: [String]) async -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        do {
            try process.run()
        } catch {
            return false
        }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                process.waitUntilExit()
                continuation.resume()
            }
        }
        guard process.terminationStatus == 0 else {
            let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            if warned.withLock({ $0.insert(arguments[0]).inserted }) {
                FileHandle.standardError.write(
                    Data("warning: \(arguments[0]) could not show a notification: \(said.prefix(300))\n".utf8))
            }
            return false
        }
        return true
    }

    /// A GVariant text-format string literal (what `gdbus call` parses).
    static func variantString(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    /// The freedesktop body markup's special characters as entities.
    static func markupEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    static func appleScriptString(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

extension RequestText {
    /// The notification for a request: who asks and for what, never its
    /// number or details (a notification can show on a locked screen).
    static func notification(of item: InboxItem, user: String) -> (title: String, body: String) {
        (
            "\(title(of: item)) for \(shown(user))",
            "\(shown(item.app)): \(from(item.event)). Answer with device-agent approve."
        )
    }
}
