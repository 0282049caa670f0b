import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation
import Synchronization

/// Showing one request and answering it: the questions race the request's
/// end (it expires, is withdrawn, or another device answers it), and the
/// time left counts down on a terminal.
struct Answering {
    /// A request's time as the approver reads it: with its zone, since
    /// the requester may be elsewhere and an audit compares it with logs.
    static let timeWithZone = Date.FormatStyle(date: .abbreviated, time: .standard).timeZone(.specificName(.short))

    let item: InboxItem
    let client: CountersignClient
    let credential: DeviceCredential
    /// Given on the command line: not asked.
    let verdict: Verdict?
    let match: String?

    /// How a request shown here ended.
    enum Outcome {
        case approved, rejected
        /// It expired, was withdrawn, or another device answered it first.
        case gone
    }

    func run() async throws -> Outcome {
        let securityKey = await SecurityKeyApproval.lookUp(for: item, client: client, credential: credential)
        let live = LiveLine(interactive: Console.isInteractive)
        show(live, securityKey: securityKey)
        live.start(until: item.event.expiresAt)
        defer { live.stop() }
        do {
            return try await answer(live: live, securityKey: securityKey)
        } catch is RequestEnded {
            live.stop()
            let expired = Date() >= item.event.expiresAt
            print("")
            print(
                expired
                    ? "This request expired before it was answered."
                    : "This request is gone: the \(asker) withdrew it, or another device answered it.")
            return .gone
        }
    }

    private func show(_ live: LiveLine, securityKey: SecurityKeyApproval?) {
        let event = item.event
        print("")
        print("\(RequestText.title(of: item)) for \(shown(event.clientUserID)) at \(shown(item.app))")
        print("  from:      \(RequestText.from(event))")
        if let quorum = event.approvers {
            print(
                "  approvers: \(quorum.requiredApprovals) of \(quorum.users.map(shown).joined(separator: ", ")) "
                    + "must approve; you are one of them")
            print("  approvals: \(RequestText.progress(of: event))")
        }
        print("  requested: \(event.CreatedAt.formatted(Self.timeWithZone))")
        if let details = event.details { print("  details:   \(shown(details))") }
        if let device = item.newDevice {
            print("  device:    \(shown(device.name)) (\(shown(device.type)))")
            print("  fingerprint: \(shown(device.fingerprint))")
            print("  Check that this fingerprint matches the one on the new device's screen.")
        }
        print("  event id:  \(shown(event.ID))")
        if event.userVerification == "required", securityKey != nil {
            print(SecurityKeyApproval.hint)
        } else if event.userVerification == "required" {
            // This device has no passkey: what it can still do is refuse.
            print("  This request must be approved with a passkey that verifies you (fingerprint, face or PIN).")
            print("  This machine has none, so here it can only be rejected: approve it in the web approver with")
            print("  its screen lock on, or give this machine a FIDO2 security key (device-agent security-key add).")
        }
        live.printTimeLeft(until: event.expiresAt)
    }

    private struct RequestEnded: Error {}

    /// Returns once the request is no longer waiting for this device: it
    /// left the inbox (the broker answers a held poll as soon as it ends,
    /// whatever ended it), or its window closed.
    private func untilGone() async throws {
        let watcher = InboxWatcher(client: client, credential: credential)
        do {
            for try await change in watcher.changes(until: item.event.expiresAt) {
                if case .pending(let items) = change, !items.contains(where: { $0.event.ID == item.event.ID }) {
                    return
                }
            }
        } catch {
            // Not heard (a removed device): the window still ends it.
            let left = item.event.expiresAt.timeIntervalSinceNow
            if left > 0 { try await Task.sleep(for: .milliseconds(Int64(left * 1000))) }
        }
    }

    /// A line typed, or `RequestEnded` if the request ends first.
    private func ask(_ prompt: String, live: LiveLine) async throws -> String? {
        // Lines typed before the question was asked are dropped; one typed
        // as it appears is not.
        let since = ContinuousClock.now
        print(prompt, terminator: "")
        flushOutput()
        let reply = try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask { try await LineReader.standardInput.next(typedAfter: since) }
            group.addTask {
                try await untilGone()
                throw RequestEnded()
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
        live.advance()
        return reply
    }

    /// Who asked: the new device for a pairing, else the requesting machine.
    private var asker: String { item.newDevice != nil ? "new device" : "requesting machine" }

    private func answer(live: LiveLine, securityKey: SecurityKeyApproval?) async throws -> Outcome {
        let pairing = item.newDevice != nil
        // Six for a pairing code, and for a login once the user rejected
        // several requests lately (the broker says how many).
        let digits = item.matchDigits ?? (pairing ? 6 : 2)
        var verdict = self.verdict
        var number = match
        // A pairing is answered with the code the new device shows: typing
        // it approves, and refusing is the other choice on the same line.
        if pairing, verdict == nil, number == nil {
            (verdict, number) = try await askPairingCode(digits: digits, live: live)
        }
        // A request that needs a passkey this machine lacks can only be
        // refused here: yes is not offered (the broker would refuse it).
        let rejectOnly = item.event.userVerification == "required" && securityKey == nil
        // An approver of someone else's request did not make it: no "this wasn't me".
        let fraud = item.event.approvers == nil ? ", or [f] this wasn't me" : ""
        while verdict == nil {
            guard
                let reply = try await ask(
                    rejectOnly
                        ? "Answer: [n] reject\(fraud): "
                        : "Approve this request? [y]es, [n]o\(fraud): ", live: live)?.lowercased()
            else { throw AgentFailure("no answer on standard input; use --event ID --yes|--reject|--report-fraud") }
            if ["y", "yes"].contains(reply) {
                if rejectOnly {
                    live.say("This machine cannot approve it (no passkey): answer n or f, or approve it elsewhere.")
                    continue
                }
                verdict = .approve
            }
            if ["n", "no"].contains(reply) { verdict = .reject }
            if ["f", "fraud"].contains(reply), !fraud.isEmpty { verdict = .fraud }
            if verdict == nil {
                let choices = (rejectOnly ? ["n"] : ["y", "n"]) + (fraud.isEmpty ? [] : ["f"])
                let listed = choices.count > 1 ? choices.dropLast().joined(separator: ", ") + " or " : ""
                live.say("Please answer \(listed)\(choices[choices.count - 1]).")
            }
        }
        let prompt = pairing ? "Pairing code shown on the new device: " : "Number shown on the requesting machine: "
        /// Asks until the reply is a number of the right length: anything
        /// else is asked again, without spending one of the broker's tries.
        func askNumber() async throws -> String {
            while true {
                guard let reply = try await ask(prompt, live: live) else {
                    throw AgentFailure("no number on standard input; use --match N")
                }
                if let typed = Self.number(reply, digits: digits) { return typed }
                live.say("Type the \(digits) digits shown on the \(asker).")
            }
        }
        if verdict == .approve, item.matchRequired, number == nil { number = try await askNumber() }
        var unsent = 0
        var signer: SecurityKeyApproval.Signer?
        while true {
            // A try whose answer was lost may have landed: its outcome is
            // read before anything is sent again, so that nothing is
            // counted twice (a wrong number) or told wrong.
            if unsent > 0, let current = try? await client.event(item.event.ID, credential: credential),
                current.status != .pending || RequestText.approved(current, by: credential)
            {
                live.stop()
                if current.decidedBy == credential.deviceID || RequestText.approved(current, by: credential) {
                    return report(current)
                }
                if current.statusReason == .tooManyWrongMatches {
                    print(tooManyWrong)
                    return .rejected
                }
                print("Not answered: the request ended meanwhile (\(current.status.rawValue)).")
                return .gone
            }
            do {
                let decided: EventDocument
                if verdict == .approve, let securityKey, signer == nil {
                    signer = try await securityKey.open(live: live, until: item.event.expiresAt)
                }
                let signing = verdict == .approve ? signer : nil
                do {
                    decided = try await client.decide(
                        item, verdict: verdict!, match: number, credential: credential,
                        assertion: signing.map { signing in { try await signing.assertion($0) } })
                } catch let error as CountersignError where error.isTransient {
                    // Kept, and sent again (signed afresh) while the window is open.
                    unsent += 1
                    let left = item.event.expiresAt.timeIntervalSinceNow
                    guard left > 1 else {
                        live.stop()
                        print(
                            "Not sent: the broker could not be reached (\(error)) before the request's window closed.")
                        return .gone
                    }
                    if unsent == 1 {
                        live.say("The broker cannot be reached (\(error)); sending the answer when it is back…")
                    }
                    try await Task.sleep(for: min(InboxWatcher.backoff(after: unsent), .seconds(left - 1)))
                    continue
                }
                live.stop()
                return report(decided)
            } catch let error as CountersignError where error.code == "wrong_match" && self.verdict == nil {
                // Asked again while tries remain; the broker counts them and
                // rejects the request after the last. A pairing may be
                // refused instead.
                if pairing {
                    live.say(Self.wrongCode(error))
                    (verdict, number) = try await askPairingCode(digits: digits, live: live)
                } else {
                    live.say(shown(error.message))
                    number = try await askNumber()
                }
            } catch let error as CountersignError where error.code == "user_verification_required" {
                live.stop()
                throw AgentFailure(
                    "not approved: this request must be approved with a passkey that verifies you, and this "
                        + "machine has none: approve it in the web approver with its screen lock on, or give this "
                        + "machine a FIDO2 security key with device-agent security-key add; here it can only be "
                        + "rejected (--reject)")
            } catch let error as CountersignError where error.code == "too_many_wrong_matches" {
                live.stop()
                print(tooManyWrong)
                return .rejected
            } catch let error as CountersignError
                where ["expired", "withdrawn", "already_decided", "already_approved"].contains(error.code)
            {
                live.stop()
                print("Not answered: \(shown(error.message)).")
                return .gone
            }
        }
    }

    /// For a pairing: the code the new device shows (approve), or a
    /// refusal (an empty line or n: reject; f: this wasn't me). Anything
    /// else is asked again, without spending one of the broker's tries.
    private func askPairingCode(digits: Int, live: LiveLine) async throws -> (Verdict, String?) {
        while true {
            guard
                let reply = try await ask(
                    "Type the \(digits)-digit code the new device shows to add it; "
                        + "Enter or [n]o refuses, [f] this wasn't me: ", live: live)
            else {
                throw AgentFailure(
                    "no answer on standard input; use --event ID with --yes --match CODE, --reject or --report-fraud")
            }
            if let typed = Self.number(reply, digits: digits) { return (.approve, typed) }
            switch reply.lowercased() {
            case "", "n", "no": return (.reject, nil)
            case "f", "fraud": return (.fraud, nil)
            default: live.say("Type the \(digits) digits the new device shows; Enter or n refuses, f this wasn't me.")
            }
        }
    }

    /// The digits typed (spaces between them allowed), if they are a
    /// number of the right length.
    private static func number(_ reply: String, digits: Int) -> String? {
        let typed = reply.filter { $0 != " " }
        return typed.count == digits && typed.allSatisfy({ $0.isASCII && $0.isNumber }) ? typed : nil
    }

    /// The broker's `wrong_match`, said of the new device's code: its
    /// message names the requesting machine's number, and ends with the
    /// tries left.
    private static func wrongCode(_ error: CountersignError) -> String {
        guard let tries = error.message.range(of: "; ") else { return shown(error.message) }
        let left = error.message[tries.upperBound...].trimmingCharacters(in: CharacterSet(charactersIn: ". "))
        return "That is not the code the new device shows; \(shown(left))."
    }

    private var tooManyWrong: String {
        item.newDevice != nil
            ? "Rejected: that was the third wrong code. The new device is told so."
            : "Rejected: that was the third wrong number. The requesting machine is told so."
    }

    /// Says how this device's answer settled the request.
    private func report(_ decided: EventDocument) -> Outcome {
        if decided.approvers != nil, decided.status != .rejected {
            let done = decided.status == .approved ? "the request is approved." : "waiting for the others."
            print("Approved: \(RequestText.progress(of: decided)); \(done)")
            return .approved
        }
        if decided.statusReason == .fraudReported {
            print(
                "Rejected and reported as not yours. Your other waiting requests are rejected too, and "
                    + "new ones from requesters are refused for a while. If someone has your password, "
                    + "change it.")
        } else {
            print(decided.status == .approved ? "Approved." : "Rejected.")
        }
        return decided.status == .approved ? .approved : .rejected
    }
}

/// The "time left" line of the request on screen, rewritten in place every
/// second on a terminal while the person is asked (the cursor is saved,
/// moved up to it, and put back, so typing is not disturbed). Elsewhere the
/// time left is printed once.
final class LiveLine: Sendable {
    private struct State {
        /// Lines printed since the time-left line.
        var below = 0
        var ticker: Task<Void, Never>?
    }
    private let state = Mutex(State())
    private let interactive: Bool

    init(interactive: Bool) { self.interactive = interactive }

    func printTimeLeft(until end: Date) {
        print(Self.text(until: end))
        flushOutput()
    }

    /// A line printed below the time-left line.
    func say(_ line: String) {
        print(line)
        flushOutput()
        advance()
    }

    /// One more line below (an answered prompt).
    func advance() { state.withLock { $0.below += 1 } }

    func start(until end: Date) {
        guard interactive else { return }
        let ticker = Task { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard !Task.isCancelled else { return }
                state.withLock { state in
                    // Save the cursor, go up to the line, rewrite it, come back.
                    print(
                        "\u{1B}7\u{1B}[\(state.below + 1)A\r\u{1B}[K\(Self.text(until: end))\u{1B}8", terminator: "")
                    flushOutput()
                }
            }
        }
        state.withLock { $0.ticker = ticker }
    }

    func stop() {
        state.withLock { state in
            state.ticker?.cancel()
            state.ticker = nil
        }
    }

    private static func text(until end: Date) -> String {
        let left = max(0, Int(end.timeIntervalSinceNow.rounded(.down)))
        return "  time left: \(left) s"
    }
}
