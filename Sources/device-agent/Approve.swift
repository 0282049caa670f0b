import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation

extension DeviceAgent {
    struct Approve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Approve or reject requests waiting for this trusted device.",
            discussion: """
                Waits for a pending request of the user, shows it, asks whether to approve, and \
                for the number the requesting machine shows. `--watch` keeps waiting for more. \
                `--event ID --yes --match N` (or `--reject`) answers without asking.

                Exit codes: 0 answered; 1 error (refused decision, broker unreachable); \
                5 no pending request arrived in time; 64 bad command line.
                """)

        @OptionGroup var account: AccountOptions

        @Flag(help: "Keep waiting for new requests after answering one.")
        var watch = false

        @Option(help: "Answer this event id without waiting for a prompt.")
        var event: String?

        @Flag(help: "Approve without asking (with --event).")
        var yes = false

        @Flag(help: "Reject without asking (with --event).")
        var reject = false

        @Option(help: "The number the requesting machine shows.")
        var match: String?

        @Option(help: "How long to wait for a request, in seconds (without --watch).")
        var timeout = 60

        func validate() throws {
            guard !(yes && reject) else { throw ValidationError("choose --yes or --reject, not both") }
            if yes || reject, event == nil { throw ValidationError("--yes and --reject need --event ID") }
            guard timeout >= 0 else { throw ValidationError("--timeout must be ≥ 0") }
        }

        func run() async throws {
            let credential = try account.enrolledCredential()
            let client = CountersignClient(for: credential)
            var seen = Set<String>()
            let deadline = Date() + TimeInterval(timeout)
            var idle = 0
            repeat {
                let wait = watch ? 25 : max(0, min(25, Int(deadline.timeIntervalSinceNow.rounded(.up))))
                let asked = Date()
                let items = try await client.inbox(credential, wait: wait).filter { !seen.contains($0.event.ID) }
                let chosen = event.map { id in items.filter { $0.event.ID == id } } ?? items
                // The inbox answers at once while the user has pending
                // requests, even ones this run does not show (already seen,
                // or not the --event asked for): wait a little before asking
                // again instead of asking as fast as the broker answers.
                if chosen.isEmpty, Date().timeIntervalSince(asked) < 1, Date() < deadline || watch {
                    idle += 1
                    try await Task.sleep(for: .milliseconds(min(5000, 500 * idle)))
                } else {
                    idle = 0
                }
                for item in chosen {
                    seen.insert(item.event.ID)
                    try await answer(item, client: client, credential: credential)
                    if !watch { return }
                }
                if !watch, Date() >= deadline {
                    if let event {
                        FileHandle.standardError.write(Data("No pending request \(event) for this device.\n".utf8))
                    } else {
                        FileHandle.standardError.write(Data("No request arrived within \(timeout) s.\n".utf8))
                    }
                    throw ExitCode(5)
                }
            } while true
        }

        private func answer(_ item: InboxItem, client: CountersignClient, credential: DeviceCredential) async throws {
            show(item, user: credential.clientUserID)
            let verdict: Verdict
            if yes {
                verdict = .approve
            } else if reject {
                verdict = .reject
            } else {
                verdict = try askVerdict()
            }
            var number = match
            let asked = item.newDevice == nil ? "Number shown on the requesting machine: " : "Pairing code: "
            if verdict == .approve, item.matchRequired, number == nil {
                number = prompt(asked)
            }
            while true {
                do {
                    let decided = try await client.decide(item, verdict: verdict, match: number, credential: credential)
                    print(decided.status == .approved ? "Approved." : "Rejected.")
                    return
                } catch let error as CountersignError where error.code == "wrong_match" && !yes {
                    // Asked again while tries remain; the broker counts them and
                    // rejects the request after the last.
                    print(shown(error.message))
                    guard let retry = prompt(asked) else { throw ExitCode.failure }
                    number = retry
                }
            }
        }

        /// Asks until the answer is yes or no: anything else is asked again,
        /// never taken as either.
        private func askVerdict() throws -> Verdict {
            while true {
                guard let reply = prompt("Approve this request? [y/n] ")?.lowercased() else {
                    throw AgentFailure("no answer on standard input; use --event ID --yes|--reject")
                }
                if ["y", "yes"].contains(reply) { return .approve }
                if ["n", "no"].contains(reply) { return .reject }
                print("Please answer y or n.")
            }
        }

        private func show(_ item: InboxItem, user: String) {
            let event = item.event
            let left = max(0, Int(event.expiresAt.timeIntervalSinceNow.rounded(.down)))
            print("")
            print("\(shown(event.event)) request for \(shown(user)) at \(shown(item.app))")
            print(
                "  from:      \(event.requesterName.map(shown) ?? "an unnamed machine") "
                    + "(\(shown(event.ip)), \(shown(event.location)))")
            print("  requested: \(event.CreatedAt.formatted(date: .abbreviated, time: .standard)) (\(left) s left)")
            if let details = event.details { print("  details:   \(shown(details))") }
            if let device = item.newDevice {
                print("  adds device: \(shown(device.name)) (\(shown(device.type)))")
                print("  fingerprint: \(shown(device.fingerprint))  <- must match the new machine's screen")
            }
            print("  event id:  \(shown(event.ID))")
            fflush(nil)
        }

        private func prompt(_ text: String) -> String? {
            print(text, terminator: "")
            fflush(nil)
            return readLine()?.trimmingCharacters(in: .whitespaces)
        }
    }
}
