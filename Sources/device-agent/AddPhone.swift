import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation

extension DeviceAgent.Devices {
    struct AddPhone: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-phone",
            abstract: "Make a phone (or any browser) a trusted device: show a QR code, then confirm it here.",
            discussion: """
                Prints a QR code, and the link under it, that opens the broker's web approver on the \
                phone with this account filled in. The phone makes its own key and asks to be paired; \
                this command then shows the phone's request with its fingerprint and asks for the \
                6-digit pairing code the phone shows, as `device-agent approve` does for any pairing. \
                The phone needs to reach the broker at the URL in the link.
                """)

        @OptionGroup var account: AccountOptions

        @Option(help: "How long to wait for the phone's pairing request, in seconds.")
        var timeout = 600

        func validate() throws {
            guard timeout > 0 else { throw ValidationError("--timeout must be > 0") }
        }

        func run() async throws {
            let credential = try account.enrolledCredential()
            let client = CountersignClient(for: credential, userAgent: DeviceAgent.userAgent)
            let link = WebApproverLink.pairing(
                broker: credential.broker, apiKeyID: credential.apiKeyID, user: credential.clientUserID)
            print(
                "Scan this with the phone's camera to open the approver and pair it with \(shown(credential.clientUserID)):"
            )
            print("")
            for line in try TerminalQRCode(link).lines(colored: Console.isInteractive) { print("  " + line) }
            print("")
            print("Or open: \(link)")
            print("")
            let limit = timeout >= 120 ? "\(timeout / 60) min" : "\(timeout) s"
            print("Waiting for the phone's pairing request, up to \(limit) (Ctrl-C to stop)…")
            flushOutput()
            let deadline = Date() + TimeInterval(timeout)
            var seen = Set<String>()
            while Date() < deadline {
                let wait = max(0, min(25, Int(deadline.timeIntervalSinceNow.rounded(.up))))
                let asked = Date()
                let pairings = try await client.inbox(credential, wait: wait).filter {
                    $0.event.event == EventName.enrollNewTrustedDevice && !seen.contains($0.event.ID)
                }
                guard let item = pairings.min(by: { $0.event.CreatedAt < $1.event.CreatedAt }) else {
                    // Other requests wait in the inbox: it answers at once; ask again later.
                    if Date().timeIntervalSince(asked) < 1 { try await Task.sleep(for: .seconds(1)) }
                    continue
                }
                seen.insert(item.event.ID)
                let answered = try await Answering(
                    item: item, client: client, credential: credential, verdict: nil, match: nil
                ).run()
                if answered { return }
            }
            FileHandle.standardError.write(Data("No pairing request arrived within \(timeout) s.\n".utf8))
            throw ExitCode(5)
        }
    }
}
