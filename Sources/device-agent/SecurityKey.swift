import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation

extension DeviceAgent {
    struct SecurityKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "security-key",
            abstract: "Protect this device's approvals with a passkey on a FIDO2 security key.",
            subcommands: [Add.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Make a passkey on the FIDO2 security key plugged in, for this trusted device.",
                discussion: """
                    Makes an ES256 passkey on the first FIDO2 security key plugged in, with you verified \
                    (the key's PIN, asked here, or its fingerprint reader), and registers it with the \
                    broker for this device. From then on, `device-agent approve` approves a request that \
                    requires user verification only with this key: touch it, and its PIN. A device has \
                    one passkey: when it has one already, replacing it takes that one too, so the key \
                    plugged in must hold it (touched twice: the current passkey, then the new one).

                    Needs libfido2 (Debian: libfido2-1; COUNTERSIGN_LIBFIDO2 names another build), and \
                    the broker's URL to name a domain (WebAuthn takes no address; a broker on \
                    127.0.0.1 is reached as localhost).

                    Exit codes: 0 added; 1 error (no libfido2, no key, wrong PIN, refused by the broker).
                    """)

            @OptionGroup var account: AccountOptions

            @Flag(help: "Ask for the security key's PIN even if it has a fingerprint reader.")
            var pinPrompt = false

            func run() async throws {
                let credential = try account.enrolledCredential()
                let client = CountersignClient(for: credential, userAgent: DeviceAgent.userAgent)
                let current = try await client.whoAmI(credential).passkey
                let session = try await SecurityKeySession.open(broker: credential.broker, alwaysPIN: pinPrompt) {
                    Prompt.secret($0)
                }
                print(
                    "Adding a passkey on \(shown(session.device.product)) for \(shown(credential.clientUserID)) "
                        + "on \(shown(credential.broker)) (RP ID \(shown(session.ceremony.rpID)))…")
                if current != nil {
                    print("This device has a passkey already: replacing it takes that one first.")
                }
                let document = try await client.registerPasskey(credential) { challenge in
                    var replacing: PasskeyAssertion?
                    if let current {
                        say("\(session.touchPrompt) (to confirm with the current passkey)")
                        replacing = try await session.assert(challenge: challenge, credentialID: current.credentialID)
                    }
                    say("\(session.touchPrompt) (to make the new passkey)")
                    return (try await session.register(challenge: challenge, for: credential), replacing)
                }
                let id = document.passkey.map { " (credential \(shown(String($0.credentialID.prefix(12))))…)" } ?? ""
                print(
                    "Done\(id): requests that require user verification are approved with this security key "
                        + "from now on (`device-agent approve`, touching it).")
            }

            private func say(_ line: String) {
                print(line)
                flushOutput()
            }
        }
    }
}
