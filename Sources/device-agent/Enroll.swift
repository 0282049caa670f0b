import ArgumentParser
import CountersignClient
import CountersignCore
import Crypto
import Foundation

extension DeviceAgent {
    struct Enroll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make this machine a trusted device of a user, with a one-time enrollment token.",
            discussion: """
                The app backend asks the broker for the token \
                (POST /api/v1/users/{user}/enrollment-tokens). A new P-256 key is created here; \
                the private key never leaves this machine.
                """)

        @OptionGroup var account: AccountOptions

        @Option(help: "The one-time enrollment token from the app backend.")
        var token: String

        @Option(help: "A name for this device that you will recognise (default: the host name).")
        var name: String?

        func run() async throws {
            let (broker, apiKey, user) = try account.account()
            let store = account.credentials
            if !(try store.matching(broker: broker, apiKeyID: apiKey, user: user)).isEmpty {
                throw AgentFailure("this machine is already a trusted device of \(user)")
            }
            let credential = DeviceCredential(
                broker: broker, apiKeyID: apiKey, clientUserID: user, privateKey: P256.Signing.PrivateKey(),
                name: name ?? ProcessInfo.processInfo.hostName)
            // Saved first: an enrolled key must never be lost to a failed write.
            try store.save(credential)
            let device: DeviceDocument
            do {
                device = try await CountersignClient(broker: broker, apiKeyID: apiKey)
                    .enroll(credential, enrollmentToken: token)
            } catch {
                try? store.remove(credential)
                throw error
            }
            print("Enrolled \(device.name) as a trusted device of \(user).")
            print("Device id:   \(device.id)")
            print("Fingerprint: \(device.fingerprint)")
        }
    }
}
