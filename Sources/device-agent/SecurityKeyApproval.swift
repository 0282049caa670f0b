import CountersignClient
import CountersignCore
import Foundation

/// Approving a request that requires user verification with this device's
/// passkey, on the security key `device-agent security-key add` made it on
/// (proto/signing.md §10): the decision goes with an assertion for its
/// challenge. A device without a passkey can only reject such a request.
struct SecurityKeyApproval: Sendable {
    /// The device's passkey, as the broker knows it.
    let passkey: PasskeyDocument
    let broker: String

    /// This device's passkey, when `item` needs one: nil for a request that
    /// does not require user verification, for a device without a passkey,
    /// and when the broker cannot be asked (approving is then refused by the
    /// broker, and said so, as for a device without one).
    static func lookUp(for item: InboxItem, client: CountersignClient, credential: DeviceCredential) async
        -> SecurityKeyApproval?
    {
        guard item.event.userVerification == "required",
            let passkey = try? await client.whoAmI(credential).passkey
        else { return nil }
        return SecurityKeyApproval(passkey: passkey, broker: credential.broker)
    }

    /// What the request shown says of it.
    static let hint =
        "  This request must be approved with this device's passkey: have its security key at hand (PIN, touch)."

    /// Opens the security key, its PIN asked here without echo; the
    /// assertions it then makes are bounded by the request's `expiry`.
    func open(live: LiveLine, until expiry: Date) async throws -> Signer {
        do {
            let session = try await SecurityKeySession.open(broker: broker) { prompt in
                try await Self.readHidden(prompt, live: live)
            }
            return Signer(session: session, credentialID: passkey.credentialID, live: live, expiry: expiry)
        } catch let failure as AgentFailure {
            live.stop()
            throw AgentFailure(
                "not approved: \(failure.description). This request needs this device's passkey, on its security "
                    + "key; it can still be rejected (--reject)")
        }
    }

    /// Makes the assertion a decision goes with.
    struct Signer: Sendable {
        let session: SecurityKeySession
        let credentialID: String
        let live: LiveLine
        let expiry: Date

        /// An assertion of the device's passkey for `challenge`.
        func assertion(_ challenge: Data) async throws -> PasskeyAssertion {
            live.say(session.touchPrompt)
            let left = min(SecurityKeySession.touchTimeout, .seconds(max(1, Int(expiry.timeIntervalSinceNow))))
            do {
                return try await session.assert(challenge: challenge, credentialID: credentialID, timeout: left)
            } catch let failure as AgentFailure {
                live.stop()
                throw AgentFailure("not approved: \(failure.description)")
            }
        }
    }

    /// A line typed after `prompt`, not echoed on a terminal. Read through
    /// the agent's one reader of standard input, which may be waiting on it
    /// already (`Prompt.secret` would race it).
    private static func readHidden(_ prompt: String, live: LiveLine) async throws -> String? {
        let since = ContinuousClock.now
        print(prompt, terminator: "")
        flushOutput()
        let terminal = isatty(STDIN_FILENO) == 1
        var original = termios()
        if terminal {
            tcgetattr(STDIN_FILENO, &original)
            var silent = original
            silent.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSANOW, &silent)
        }
        defer {
            if terminal { tcsetattr(STDIN_FILENO, TCSANOW, &original) }
            // Not echoed, on a terminal or from a pipe: the line ends here.
            print("")
            live.advance()
        }
        return try await LineReader.standardInput.next(typedAfter: since)
    }
}
