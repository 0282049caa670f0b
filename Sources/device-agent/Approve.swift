import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation
import Synchronization

extension DeviceAgent {
    struct Approve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Approve or reject requests waiting for this trusted device.",
            discussion: """
                Waits for a pending request of the user, shows it with the time left, asks whether \
                to approve, and for the number the requesting machine shows. A pairing (a new device \
                asking to be added) asks only for the code the new device shows: typing it approves, \
                an empty line or n refuses, f reports it as not yours. Several waiting \
                requests are listed to choose from, newest last. A request that is withdrawn or \
                expires while you are asked is dropped, and said so. `--watch` keeps waiting for \
                more, and rides out a broker restart or a dropped connection. `--event ID --yes \
                --match N` (or `--reject`, `--report-fraud`) answers without asking.

                A request that several people must approve (an app's "2 of these 3 people") is shown \
                to each of them with the approvals so far; each person's approval counts once, \
                whichever of their devices gives it, and any one's rejection rejects it.

                Answer f ("this wasn't me") to a request you did not make: it is rejected, every \
                other request waiting for you is rejected too, and for a while (15 minutes by \
                default) nobody can send you new ones with only the app's key id; the app is told.

                Exit codes: 0 answered; 1 error (refused decision, broker unreachable); \
                5 no pending request arrived in time; 6 the --event request is not pending (unknown, \
                withdrawn, approved, rejected or expired; said at once), or this user approved it already \
                and it waits for other approvers; 7 this device is suspended (the \
                directory does not list its user as enabled: no request is shown to it until it does; \
                said at once); 64 bad command line.
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

        @Flag(help: "Reject as \"this wasn't me\" without asking (with --event); see above.")
        var reportFraud = false

        @Option(help: "The number the requesting machine shows (for a pairing, the code the new device shows).")
        var match: String?

        @Option(help: "How long to wait for a request, in seconds (without --watch).")
        var timeout = 60

        @Flag(help: "Also raise a desktop notification for each new request (see `device-agent watch`).")
        var notify = false

        func validate() throws {
            guard [yes, reject, reportFraud].filter({ $0 }).count <= 1 else {
                throw ValidationError("choose one of --yes, --reject and --report-fraud")
            }
            if yes || reject || reportFraud, event == nil {
                throw ValidationError("--yes, --reject and --report-fraud need --event ID")
            }
            guard timeout >= 0 else { throw ValidationError("--timeout must be ≥ 0") }
        }

        func run() async throws {
            let credential = try account.enrolledCredential()
            let client = CountersignClient(for: credential, userAgent: DeviceAgent.userAgent)
            let wanted = event.map { "request \(shown($0))" } ?? "requests"
            print(
                "Waiting for \(wanted) for \(shown(credential.clientUserID)) on \(shown(credential.broker))"
                    + "\(watch ? "" : ", up to \(timeout) s") (Ctrl-C to stop)…")
            flushOutput()
            // A suspended device is shown no request: say so rather than wait.
            try await Self.requireNotSuspended(client: client, credential: credential)
            if let event { try await Self.requireStillPending(event, client: client, credential: credential) }
            var seen = Set<String>()
            let notifier = notify ? DesktopNotifier() : nil
            var notified = Set<String>()
            let watcher = InboxWatcher(client: client, credential: credential)
            // Without --watch, a transient failure ends the command (exit 1).
            for try await change in watcher.changes(
                until: watch ? nil : Date() + TimeInterval(timeout), ridingOutOutages: watch)
            {
                guard let pending = change.requestsSayingOutages() else { continue }
                // One this user approved already waits for other approvers.
                let items = pending.filter {
                    !seen.contains($0.event.ID) && !RequestText.approved($0.event, by: credential)
                }
                let chosen = event.map { id in items.filter { $0.event.ID == id } } ?? items
                // The request asked for is not waiting: say at once if it
                // has ended, rather than wait for it until --timeout.
                if let event, chosen.isEmpty {
                    try await Self.requireStillPending(event, client: client, credential: credential)
                }
                if let notifier {
                    for item in chosen where notified.insert(item.event.ID).inserted {
                        let (title, body) = RequestText.notification(of: item, user: credential.clientUserID)
                        await notifier.notify(title: title, body: body)
                    }
                }
                var queue = chosen.sorted { $0.event.CreatedAt < $1.event.CreatedAt }
                while !queue.isEmpty {
                    let item = try await pick(from: queue)
                    queue.removeAll { $0.event.ID == item.event.ID }
                    seen.insert(item.event.ID)
                    let outcome = try await Answering(
                        item: item, client: client, credential: credential,
                        verdict: yes ? .approve : reject ? .reject : reportFraud ? .fraud : nil,
                        match: match
                    ).run()
                    if outcome != .gone, !watch { return }
                    if watch {
                        print("")
                        print("Waiting for more requests (Ctrl-C to stop)…")
                    }
                    // Asked again only where the person chooses: the rest
                    // come with the inbox's next change (this one's end).
                    if Console.isInteractive { break }
                }
            }
            if let event {
                FileHandle.standardError.write(Data("No pending request \(shown(event)) for this device.\n".utf8))
            } else {
                FileHandle.standardError.write(Data("No request arrived within \(timeout) s.\n".utf8))
            }
            throw ExitCode(5)
        }

        /// Exits (7) saying the device is suspended, if it is.
        static func requireNotSuspended(client: CountersignClient, credential: DeviceCredential) async throws {
            let device = try await client.whoAmI(credential)
            guard let since = device.suspendedAt else { return }
            FileHandle.standardError.write(Data((Self.suspension(device, since: since) + "\n").utf8))
            throw ExitCode(7)
        }

        /// What a suspended device is told.
        static func suspension(_ device: DeviceDocument, since: Date) -> String {
            "This device is suspended since \(since.formatted(date: .abbreviated, time: .shortened)): the directory "
                + "does not list \(shown(device.clientUserID)) as enabled, so it is shown no request and approves "
                + "nothing until it does (nothing was deleted)."
        }

        /// Exits (6) saying how request `id` ended, if it did (withdrawn,
        /// approved, rejected or expired), or that the broker knows no
        /// such request of this device's user.
        static func requireStillPending(
            _ id: String, client: CountersignClient, credential: DeviceCredential
        ) async throws {
            let current: EventDocument
            do {
                current = try await client.event(id, credential: credential)
            } catch let error as CountersignError where error.status == 404 {
                FileHandle.standardError.write(
                    Data(
                        ("No request \(shown(id)) of \(shown(credential.clientUserID)) is known at "
                            + "\(shown(credential.broker)): check the id the requesting machine shows.\n").utf8))
                throw ExitCode(6)
            }
            let ended: String
            switch (current.status, current.statusReason) {
            case (.pending, _) where RequestText.approved(current, by: credential):
                ended =
                    "was approved by \(shown(credential.clientUserID)) already and waits for other approvers ("
                    + RequestText.progress(of: current) + ")"
            case (.pending, _): return
            case (.expired, .withdrawn): ended = "was withdrawn by the machine that asked"
            case (.expired, _): ended = "expired before it was answered"
            case (.approved, _):
                ended = "was approved already" + (current.method == .totp ? " with a code" : "")
            case (.rejected, _): ended = "was rejected already"
            }
            FileHandle.standardError.write(Data("Request \(shown(id)) \(ended); there is nothing to answer.\n".utf8))
            throw ExitCode(6)
        }

        /// The one request to show: the only one, or, on a terminal, the one
        /// the person picks from the list; from a pipe, the oldest.
        private func pick(from items: [InboxItem]) async throws -> InboxItem {
            guard items.count > 1, Console.isInteractive, event == nil else { return items[0] }
            print("")
            print("\(items.count) requests are waiting:")
            for (index, item) in items.enumerated() {
                print("  \(index + 1)) \(RequestText.summary(of: item))")
            }
            while true {
                let since = ContinuousClock.now
                print("Which one? [1-\(items.count), Enter for the newest] ", terminator: "")
                flushOutput()
                guard let reply = try await LineReader.standardInput.next(typedAfter: since) else {
                    throw AgentFailure("no answer on standard input; use --event ID --yes|--reject")
                }
                if reply.isEmpty { return items[items.count - 1] }
                if let number = Int(reply), items.indices.contains(number - 1) { return items[number - 1] }
                print("Type a number from 1 to \(items.count).")
            }
        }
    }
}

/// How requests are named to the person approving them.
enum RequestText {
    /// "Log in", "Add a new device", …, rather than the event constant.
    static func title(of item: InboxItem) -> String {
        switch item.event.event {
        case EventName.login: "Log-in request"
        case EventName.transaction: "Transaction to confirm"
        case EventName.enrollNewTrustedDevice: "Add a new device"
        default: "\(shown(item.event.event)) request"
        }
    }

    /// The requesting machine, its address and, when the broker knows it,
    /// its location.
    static func from(_ event: EventDocument) -> String {
        let place = event.location == "Unknown" ? "" : ", \(shown(event.location))"
        return "\(event.requesterName.map(shown) ?? "an unnamed machine") (\(shown(event.ip))\(place))"
    }

    /// How far an event that several people approve has got: "1 of 2
    /// approvals: alice at 10:02:03 CET".
    static func progress(of event: EventDocument) -> String {
        let approvals = event.approvals ?? []
        let required = event.approvers?.requiredApprovals ?? 1
        let who = approvals.map { "\(shown($0.clientUserID)) at \($0.approvedAt.formatted(Answering.timeWithZone))" }
        return "\(approvals.count) of \(required) approval\(required == 1 ? "" : "s")"
            + (who.isEmpty ? "" : ": " + who.joined(separator: ", "))
    }

    /// Whether the user of `credential` approved `event` (one that several
    /// people approve) already.
    static func approved(_ event: EventDocument, by credential: DeviceCredential) -> Bool {
        event.approvals?.contains { $0.clientUserID == credential.clientUserID } ?? false
    }

    /// One line for a list of waiting requests.
    static func summary(of item: InboxItem) -> String {
        let left = max(0, Int(item.event.expiresAt.timeIntervalSinceNow.rounded(.down)))
        let device = item.newDevice.map { " \(shown($0.name))" } ?? ""
        return "\(title(of: item))\(device) from \(from(item.event)) at \(shown(item.app)), \(left) s left"
    }
}
