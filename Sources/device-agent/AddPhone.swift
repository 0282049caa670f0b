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
                The phone needs to reach the broker at the URL in the link. That is the broker URL \
                this agent uses, unless --approver-url names the address the phone reaches it at (an \
                agent on the broker's own machine talks to 127.0.0.1, which a phone cannot open).

                Exit codes: 0 the phone was added; 1 error; 3 the pairing was refused here (or after \
                three wrong codes); 5 no pairing request arrived in time.
                """)

        @OptionGroup var account: AccountOptions

        @Option(help: "How long to wait for the phone's pairing request, in seconds.")
        var timeout = 600

        @Option(
            help: ArgumentHelp(
                "The broker's URL as the phone reaches it (default: the broker URL this agent uses).",
                valueName: "url"))
        var approverURL: String?

        func validate() throws {
            guard timeout > 0 else { throw ValidationError("--timeout must be > 0") }
            if let approverURL {
                guard let url = URL(string: approverURL), ["http", "https"].contains(url.scheme), url.host != nil,
                    url.query == nil, url.fragment == nil
                else {
                    throw ValidationError("--approver-url must be an http or https URL, e.g. https://broker.example")
                }
            }
        }

        func run() async throws {
            let credential = try account.enrolledCredential()
            let client = CountersignClient(for: credential, userAgent: DeviceAgent.userAgent)
            let base = approverURL ?? credential.broker
            let link = WebApproverLink.pairing(
                broker: base, apiKeyID: credential.apiKeyID, user: credential.clientUserID)
            if let host = URL(string: base)?.host, ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host) {
                FileHandle.standardError.write(
                    Data(
                        ("Note: the link names localhost, this machine itself, which a phone cannot open: open "
                            + "it in a browser here (a screen lock works at localhost); for a phone, serve the "
                            + "broker at an https name the phone reaches and give --approver-url https://… (a "
                            + "phone's browser keeps no keys and no passkeys at a plain-http address).\n").utf8))
            } else if URL(string: base)?.scheme == "http" {
                // Browsers give WebCrypto key storage and service workers
                // only to secure contexts: https, or the device's own localhost.
                FileHandle.standardError.write(
                    Data(
                        ("Note: the link is plain http, and a phone's browser gives a page that is not https "
                            + "no key store and no notifications: the approver will not work there. Serve the "
                            + "broker over https (device-broker serve --tls-certificate, or a reverse proxy) "
                            + "and give --approver-url https://….\n").utf8))
            }
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
            var seen = Set<String>()
            let watcher = InboxWatcher(client: client, credential: credential)
            for try await change in watcher.changes(until: Date() + TimeInterval(timeout)) {
                guard let items = change.requestsSayingOutages() else { continue }
                let pairings = items.filter {
                    $0.event.event == EventName.enrollNewTrustedDevice && !seen.contains($0.event.ID)
                }
                guard let item = pairings.min(by: { $0.event.CreatedAt < $1.event.CreatedAt }) else { continue }
                seen.insert(item.event.ID)
                switch try await Answering(
                    item: item, client: client, credential: credential, verdict: nil, match: nil
                ).run() {
                case .approved:
                    print("The phone is now a trusted device of \(shown(credential.clientUserID)).")
                    return
                case .rejected:
                    FileHandle.standardError.write(Data("The pairing was refused; the phone was not added.\n".utf8))
                    throw ExitCode(3)
                case .gone:
                    // The phone gave up or started again: wait for its next request.
                    continue
                }
            }
            FileHandle.standardError.write(Data("No pairing request arrived within \(timeout) s.\n".utf8))
            throw ExitCode(5)
        }
    }
}
