import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation

extension DeviceAgent {
    struct Login: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Log in as a user: approved at once on a trusted device, else by one.",
            discussion: """
                On a machine that is not trusted, this creates a pending LOGIN request, shows a \
                two-digit number, and waits (up to the broker's approval window, 1 minute by \
                default) while you approve it on a trusted device with `device-agent approve`, \
                typing that number there.

                On a trusted device of an app that requires user verification (a passkey), the request \
                is pending like any other: approve it with the passkey of a trusted device, this one's too.

                With --code: when no trusted device can answer, the request is finished at once with \
                the TOTP code `device-agent code` shows on one of them.

                With --trust: make this machine a trusted device, approved by one you have \
                (the same as `device-agent enroll --pair`).

                Exit codes: 0 approved; 1 error (broker unreachable, refused request); \
                3 rejected on a trusted device (or a wrong number typed there three times); 4 expired: \
                nobody decided within the window; 5 the code was refused (wrong, used, or too many \
                tries); 6 refused for now: the user answered a recent request with "this wasn't me", \
                and requests are refused for a while (it says until when); 64 bad command line; 130 interrupted (Ctrl-C) and 143 stopped (SIGTERM), \
                after withdrawing the request.

                Ctrl-C, SIGTERM or a refused code withdraws the pending request: no trusted device \
                can approve it afterwards.
                """)

        @OptionGroup var account: AccountOptions

        @Option(help: "The name shown to the approver (default: the host name).")
        var name: String?

        @Flag(help: "Print the event and the broker-signed event token as JSON.")
        var json = false

        @Option(help: "A TOTP code from a trusted device of the user, instead of waiting for an approval.")
        var code: String?

        @Flag(help: "Ask a trusted device to make this machine trusted (as `enroll --pair`).")
        var trust = false

        @Flag(help: "With --trust: protect the new key with a PIN or passphrase (asked for).")
        var pin = false

        func validate() throws {
            guard !(trust && code != nil) else { throw ValidationError("choose --trust or --code, not both") }
            if let code, !TOTPParameters.isWellFormed(code) { throw ValidationError("a code is 6 digits") }
            if pin, !trust { throw ValidationError("--pin goes with --trust") }
        }

        /// A new login request; a user protected by a fraud report is said so
        /// (exit 6), with when to try again.
        private func requestLogin(_ client: CountersignClient, user: String, console: Console) async throws
            -> EventTicket
        {
            do {
                return try await client.requestLogin(
                    user: user, requesterName: name ?? ProcessInfo.processInfo.hostName)
            } catch let error as CountersignError where error.code == "user_protected" {
                let wait =
                    error.retryAfter.map { " Try again in \($0 >= 120 ? "\($0 / 60) minutes" : "\($0) seconds")." }
                    ?? ""
                console.say(
                    "Refused: \(shown(user)) answered a recent request with \"this wasn't me\", so new requests "
                        + "are refused for a while.\(wait) If that request was yours, say so to the account's owner.")
                throw ExitCode(6)
            }
        }

        /// Waits for a trusted device to decide the pending request, with a
        /// countdown; SIGINT or SIGTERM withdraws it.
        private func awaitOutcome(
            of ticket: EventTicket, client: CountersignClient, console: Console, signals: SignalWatch
        ) async throws -> EventDocument {
            try await PendingRequest(ticket: ticket, client: client, console: console).waitWithdrawing(on: signals) {
                try await Countdown(until: ticket.event.expiresAt, console: console).run {
                    try await client.awaitOutcome(of: ticket)
                }
            }
        }

        func run() async throws {
            let (broker, apiKey, user) = try account.account()
            let client = CountersignClient(broker: broker, apiKeyID: apiKey, userAgent: DeviceAgent.userAgent)
            if trust {
                let enrollment = Enrollment(account: account, name: name, pin: pin)
                return try await enrollment.pair(
                    try enrollment.newCredential(broker: broker, apiKey: apiKey, user: user), client: client)
            }
            let console = Console(toStandardError: json)
            let trusted = try account.credentials.matching(broker: broker, apiKeyID: apiKey, user: user).first
            let outcome: EventDocument
            var decidedElsewhere = trusted == nil && code == nil
            if let trusted {
                let credential = try account.credentials.unlock(trusted, pin: Prompt.pin(for: trusted))
                let signals = SignalWatch([SIGINT, SIGTERM])
                defer { signals.stop() }
                let ticket = try await client.loginAsTrustedDevice(credential)
                if ticket.event.status == .pending {
                    // The app requires user verification: this machine's
                    // key is not enough, a passkey must approve it.
                    console.say(
                        "This app requires a passkey: approve request \(shown(ticket.event.ID)) with the passkey of "
                            + "a trusted device of \(shown(user)) (this one's too).")
                    outcome = try await awaitOutcome(of: ticket, client: client, console: console, signals: signals)
                    decidedElsewhere = true
                } else {
                    outcome = ticket.event
                    console.say("This machine is a trusted device of \(shown(user)): approved.")
                }
            } else if let code {
                let ticket = try await requestLogin(client, user: user, console: console)
                do {
                    outcome = try await client.submitCode(code, for: ticket)
                } catch {
                    let exit: Int32
                    switch error {
                    case let error as CountersignError where error.status == 422 || error.status == 429:
                        console.say("The code was refused: \(shown(error.message)).")
                        exit = 5
                    case let error as CountersignError where error.code == "totp_unavailable":
                        console.say(
                            "This broker takes no TOTP codes: its operator has not given it a TOTP key "
                                + "(device-broker serve --totp-key-file). Log in without --code and approve "
                                + "on a trusted device.")
                        exit = 1
                    default:
                        console.say("The code could not be checked: \(error).")
                        exit = 1
                    }
                    // Nobody is left waiting on it, however it failed: a
                    // trusted device must not be asked about a login its
                    // person gave up on.
                    await PendingRequest(ticket: ticket, client: client, console: console).withdraw(
                        because: "Not logged in")
                    throw ExitCode(exit)
                }
                console.say("Approved with a TOTP code from a trusted device.")
            } else {
                let signals = SignalWatch([SIGINT, SIGTERM])
                defer { signals.stop() }
                let ticket = try await requestLogin(client, user: user, console: console)
                console.say("Login request \(shown(ticket.event.ID)) sent to \(shown(user))'s trusted devices.")
                if let number = ticket.matchNumber {
                    console.say("Match number: \(shown(number))")
                    console.say("Approve on a trusted device (device-agent approve) and type \(shown(number)) there.")
                }
                outcome = try await awaitOutcome(of: ticket, client: client, console: console, signals: signals)
            }
            if json {
                struct Output: Encodable {
                    let event: EventDocument
                    let token: String?
                }
                let data = try JSONEncoder.pretty.encode(Output(event: outcome, token: outcome.signature))
                print(String(decoding: data, as: UTF8.self))
            }
            switch outcome.status {
            case .approved:
                if decidedElsewhere { console.say("Approved on a trusted device.") }
            case .rejected where outcome.statusReason == .tooManyWrongMatches:
                console.say("Rejected: a wrong number was typed three times on the trusted device.")
                console.say("If that was you, try again and type the number this machine shows.")
                throw ExitCode(3)
            case .rejected where outcome.statusReason == .fraudReported:
                console.say("Rejected: the trusted device's owner said this request was not theirs.")
                throw ExitCode(3)
            case .rejected where outcome.statusReason == .userProtected:
                console.say(
                    "Rejected: \(shown(user)) reported another request as not theirs, which rejected this one too.")
                throw ExitCode(3)
            case .rejected:
                console.say("Rejected on a trusted device.")
                throw ExitCode(3)
            case .expired:
                console.say("Expired: no trusted device answered within the window.")
                // The broker does not tell a requester whether the user has
                // devices at all (that would tell anyone which users exist).
                console.say(
                    "If \(shown(user)) has no trusted device yet, enroll this machine as the first one: "
                        + "device-agent enroll.")
                throw ExitCode(4)
            case .pending:
                throw AgentFailure("the broker still reports the request as pending")
            }
        }
    }
}

/// A live countdown of the approval window on an interactive terminal.
struct Countdown {
    let until: Date
    let console: Console

    func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        guard Console.isInteractive, !console.toStandardError else { return try await body() }
        let ticker = Task {
            while !Task.isCancelled {
                let left = max(0, Int(until.timeIntervalSinceNow.rounded(.up)))
                print("\r\u{1B}[KWaiting for approval… \(left) s left", terminator: "")
                flushOutput()
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        let result = await Result(catching: { try await body() })
        ticker.cancel()
        await ticker.value
        print("\r\u{1B}[K", terminator: "")
        flushOutput()
        return try result.get()
    }
}
