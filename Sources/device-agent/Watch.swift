import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation

extension DeviceAgent {
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Raise a desktop notification for each new request, until stopped.",
            discussion: """
                Answers nothing: a notification says who asks, and you answer with \
                `device-agent approve` (or on the web approver). This is what the background service \
                (`device-agent service install`) runs at login. Notifications go to the freedesktop \
                notification service on Linux desktops (through gdbus or notify-send), to \
                Notification Center on macOS, and elsewhere ring the terminal's bell. An account with a \
                PIN needs the PIN at start, on a terminal.
                """)

        @OptionGroup var account: AccountOptions

        func run() async throws {
            let credential = try account.enrolledCredential()
            let client = CountersignClient(for: credential, userAgent: DeviceAgent.userAgent)
            let notifier = DesktopNotifier()
            print(
                "Watching for requests for \(shown(credential.clientUserID)) on \(shown(credential.broker)); "
                    + "each raises a desktop notification (Ctrl-C to stop).")
            flushOutput()
            var notified = Set<String>()
            for try await change in InboxWatcher(client: client, credential: credential).changes() {
                guard let items = change.requestsSayingOutages() else { continue }
                for item in items where !notified.contains(item.event.ID) {
                    let (title, body) = RequestText.notification(of: item, user: credential.clientUserID)
                    print("\(title): \(RequestText.summary(of: item))")
                    flushOutput()
                    await notifier.notify(title: title, body: body)
                }
                // Remembered only while they wait, so the set stays small.
                notified = Set(items.map(\.event.ID))
            }
        }
    }
}
