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

                Exit codes: 0 approved; 1 error (broker unreachable, refused request); \
                3 rejected on a trusted device; 4 expired: nobody decided within the window; \
                64 bad command line.
                """)

        @OptionGroup var account: AccountOptions

        @Option(help: "The name shown to the approver (default: the host name).")
        var name: String?

        @Flag(help: "Print the event and the broker-signed event token as JSON.")
        var json = false

        func run() async throws {
            let (broker, apiKey, user) = try account.account()
            let client = CountersignClient(broker: broker, apiKeyID: apiKey)
            let console = Console(toStandardError: json)
            let trusted = try account.credentials.matching(broker: broker, apiKeyID: apiKey, user: user).first
            let outcome: EventDocument
            if let trusted {
                outcome = try await client.loginAsTrustedDevice(trusted).event
                console.say("This machine is a trusted device of \(user): approved.")
            } else {
                let ticket = try await client.requestLogin(
                    user: user, requesterName: name ?? ProcessInfo.processInfo.hostName)
                console.say("Login request \(ticket.event.ID) sent to \(user)'s trusted devices.")
                if let number = ticket.matchNumber {
                    console.say("Match number: \(number)")
                    console.say("Approve on a trusted device (device-agent approve) and type \(number) there.")
                }
                outcome = try await Countdown(until: ticket.event.expiresAt, console: console).run {
                    try await client.awaitOutcome(of: ticket)
                }
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
                if !json || trusted == nil {
                    console.say("Approved\(outcome.decidedBy.map { " by device \($0)" } ?? "").")
                }
            case .rejected:
                console.say("Rejected on a trusted device.")
                throw ExitCode(3)
            case .expired:
                console.say("Expired: no trusted device answered within the window.")
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
                fflush(nil)
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        let result = await Result(catching: { try await body() })
        ticker.cancel()
        await ticker.value
        print("\r\u{1B}[K", terminator: "")
        fflush(nil)
        return try result.get()
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
