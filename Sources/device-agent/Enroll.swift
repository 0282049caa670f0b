import ArgumentParser
import CountersignClient
import CountersignCore
import Crypto
import Foundation

extension DeviceAgent {
    struct Enroll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Make this machine a user's trusted device: with a one-time token, or by verifying an email/phone.",
            discussion: """
                With --token: the app backend asks the broker for the token \
                (POST /api/v1/users/{user}/enrollment-tokens).

                With --email or --phone (a user's first device only): opens the broker's \
                verification page in a browser, waits for it on 127.0.0.1, and enrolls this \
                machine for the verified address, which becomes the user id. The API key \
                needs http://127.0.0.1/callback among its redirect URLs.

                With --pair: asks a trusted device of the user to add this machine. It prints a \
                pairing code and the new key's fingerprint; on the trusted device, `device-agent \
                approve` shows the same fingerprint and asks for the code. This machine learns \
                the answer at once. Exit codes: 0 trusted; 3 refused; 4 nobody answered in time.

                With --recovery: for a user who lost every trusted device, one of their recovery \
                codes (asked for; each works once) enrolls this machine.

                A new P-256 key is created here; the private key never leaves this machine. The \
                broker also gives the device a TOTP secret, for `device-agent code`. With --pin, both \
                are sealed in the key file under a PIN or passphrase (scrypt, AES-GCM), asked for \
                whenever the key is used.
                """)

        @OptionGroup var account: AccountOptions

        @Option(help: "The one-time enrollment token from the app backend.")
        var token: String?

        @Option(help: "Verify this email address instead of using a token.")
        var email: String?

        @Option(help: "Verify this phone number (with country code) instead of using a token.")
        var phone: String?

        @Flag(help: "Ask a trusted device of the user to add this machine.")
        var pair = false

        @Flag(help: "Enroll with one of the user's recovery codes (asked for).")
        var recovery = false

        @Flag(help: "Protect this device's key with a PIN or passphrase (asked for).")
        var pin = false

        @Option(help: "A name for this device that you will recognise (default: the host name).")
        var name: String?

        @Flag(help: "Print the verification page's address without opening a browser.")
        var noBrowser = false

        @Option(help: "Seconds to wait for the verification in the browser.")
        var timeout = 600

        func validate() throws {
            guard [token, email, phone].compactMap({ $0 }).count + (pair ? 1 : 0) + (recovery ? 1 : 0) == 1 else {
                throw ValidationError("give one of --token, --email, --phone, --pair or --recovery")
            }
        }

        func run() async throws {
            guard let broker = account.resolvedBroker, let apiKey = account.resolvedAPIKey else {
                throw usageFailure("give --broker URL and --api-key ID")
            }
            let client = CountersignClient(broker: broker, apiKeyID: apiKey, userAgent: DeviceAgent.userAgent)
            let enrollment = Enrollment(account: account, name: name, pin: pin)
            if pair || token != nil || recovery {
                guard let user = account.resolvedUser else { throw usageFailure("give --user ID") }
                let credential = try enrollment.newCredential(broker: broker, apiKey: apiKey, user: user)
                if pair { return try await enrollment.pair(credential, client: client) }
                if let token {
                    return try await enrollment.register(credential) {
                        try await client.enroll(credential, enrollmentToken: token)
                    }
                }
                guard let code = Prompt.secret("Recovery code: "), !code.isEmpty else {
                    throw AgentFailure("no recovery code given")
                }
                return try await enrollment.register(credential) {
                    try await client.enroll(credential, recoveryCode: code)
                }
            }
            let type: IdentifierType = email != nil ? .email : .phone
            guard let user = type.normalize(email ?? phone ?? "") else {
                throw usageFailure(type == .email ? "not an email address" : "give the number as +<country><number>")
            }
            if let given = account.resolvedUser, given != user {
                throw usageFailure("--user must be the verified \(type == .email ? "address" : "number"), \(user)")
            }
            let credential = try enrollment.newCredential(broker: broker, apiKey: apiKey, user: user)
            let listener = try await LoopbackRedirectListener.start()
            let pending = client.startVerification(type: type, redirectURL: listener.redirectURL)
            print("Verify \(user) in your browser:")
            print("  \(pending.pageURL)")
            flushOutput()
            if !noBrowser { openBrowser(pending.pageURL) }
            guard let query = await listener.callback(timeout: .seconds(timeout)) else {
                await listener.close()
                throw AgentFailure("no answer from the browser within \(timeout) s")
            }
            await listener.close()
            let code = try pending.complete(with: query)
            try await enrollment.register(credential) { try await client.enroll(credential, verification: code) }
        }

        private func openBrowser(_ url: String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["xdg-open", url]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try? process.run()
        }
    }
}

/// Making this machine a trusted device, however it is vouched for.
struct Enrollment {
    let account: AccountOptions
    let name: String?
    let pin: Bool

    /// A new key for the account, protected by a new PIN if asked.
    func newCredential(broker: String, apiKey: String, user: String) throws -> DeviceCredential {
        if !(try account.credentials.matching(broker: broker, apiKeyID: apiKey, user: user)).isEmpty {
            throw AgentFailure("this machine is already a trusted device of \(user)")
        }
        var credential = DeviceCredential(
            broker: broker, apiKeyID: apiKey, clientUserID: user, privateKey: P256.Signing.PrivateKey(),
            name: name ?? ProcessInfo.processInfo.hostName)
        if pin { try credential.setPIN(try Prompt.newPIN()) }
        return credential
    }

    /// Saves the key first (an enrolled key must never be lost to a
    /// failed write), enrolls, and removes the key if enrolling failed,
    /// with the config directory if this attempt made it: a refused
    /// enrollment leaves nothing behind.
    func register(_ credential: DeviceCredential, _ register: () async throws -> DeviceDocument) async throws {
        let store = account.credentials
        let directoryExisted = FileManager.default.fileExists(atPath: store.directory.path)
        try store.save(credential)
        let device: DeviceDocument
        do {
            device = try await register()
        } catch {
            try? store.remove(credential)
            if !directoryExisted,
                (try? FileManager.default.contentsOfDirectory(atPath: store.directory.path))?.isEmpty == true
            {
                try? FileManager.default.removeItem(at: store.directory)
            }
            throw error
        }
        print("Enrolled \(shown(device.name)) as a trusted device of \(shown(device.clientUserID)).")
        print("Device id:   \(shown(device.id))")
        print("Fingerprint: \(shown(device.fingerprint))")
        await TOTPSetup(store: store).run(credential)
    }

    /// Asks a trusted device to add this machine's key and waits for its
    /// answer; the key is kept only if the answer is yes.
    func pair(_ credential: DeviceCredential, client: CountersignClient) async throws {
        let store = account.credentials
        try store.save(credential)
        let signals = SignalWatch([SIGINT, SIGTERM])
        defer { signals.stop() }
        let outcome: EventDocument
        do {
            let ticket = try await client.requestPairing(credential)
            let left = max(0, Int(ticket.event.expiresAt.timeIntervalSinceNow.rounded(.down)))
            print(
                "Pairing request \(shown(ticket.event.ID)) sent to the trusted devices of "
                    + "\(shown(credential.clientUserID)) to add \(shown(credential.name)).")
            print("On one of them (`device-agent approve`, or its web approver), check this fingerprint")
            print("and type this code there:")
            print("  Pairing code: \(shown(ticket.matchNumber ?? "none"))")
            print("  Fingerprint:  \(credential.publicKey.fingerprint)")
            print("Waiting up to \(left) s for the answer… (Ctrl-C withdraws the request)")
            flushOutput()
            let console = Console()
            outcome = try await PendingRequest(ticket: ticket, client: client, console: console)
                .waitWithdrawing(on: signals) {
                    try await Countdown(until: ticket.event.expiresAt, console: console).run {
                        try await client.awaitOutcome(of: ticket)
                    }
                }
        } catch {
            try? store.remove(credential)
            throw error
        }
        switch outcome.status {
        case .approved:
            print("This machine is now a trusted device of \(credential.clientUserID).")
            print("Device id:   \(credential.deviceID)")
            print("Fingerprint: \(credential.publicKey.fingerprint)")
            await TOTPSetup(store: store).run(credential)
        case .rejected:
            try? store.remove(credential)
            FileHandle.standardError.write(Data("The pairing was refused.\n".utf8))
            throw ExitCode(3)
        case .pending, .expired:
            try? store.remove(credential)
            FileHandle.standardError.write(Data("Nobody answered in time; nothing was added.\n".utf8))
            throw ExitCode(4)
        }
    }
}
