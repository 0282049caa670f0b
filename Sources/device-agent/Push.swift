import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation

extension DeviceAgent {
    struct Push: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Have this device's requests pushed to a Web Push or UnifiedPush endpoint.",
            discussion: """
                A browser's web approver subscribes by itself. For anything else that speaks Web Push \
                (RFC 8030 with RFC 8291 encryption), such as a UnifiedPush distributor on a phone, give \
                the endpoint and its keys here: the broker then sends each new request for this \
                device's user to it, encrypted to the keys, with only the event id, the app's name and \
                a short title in it. Print the broker's VAPID key with `push key` for distributors that ask.
                """,
            subcommands: [Subscribe.self, Unsubscribe.self, Key.self])

        struct Subscribe: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Send this device's requests to a push endpoint, replacing any it had.")

            @OptionGroup var account: AccountOptions

            @Option(help: "The push endpoint URL (https).")
            var endpoint: String

            @Option(help: "The subscription's P-256 public key, base64url (keys.p256dh).")
            var p256dh: String

            @Option(
                help:
                    "The subscription's 16-byte authentication secret, base64url (keys.auth); write --auth=VALUE, as it may begin with '-'."
            )
            var auth: String

            @Option(help: "The broker VAPID key id the subscription was made with (default: the current one).")
            var vapidKeyID: String?

            func run() async throws {
                let credential = try account.enrolledCredential()
                let client = CountersignClient(for: credential, userAgent: DeviceAgent.userAgent)
                _ = try await client.subscribePush(
                    PushEndpoint(endpoint: endpoint, p256dh: p256dh, auth: auth, vapidKeyID: vapidKeyID),
                    credential: credential)
                print("New requests for \(credential.clientUserID) are now pushed to this endpoint.")
            }
        }

        struct Unsubscribe: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Stop pushing this device's requests.")

            @OptionGroup var account: AccountOptions

            func run() async throws {
                let credential = try account.enrolledCredential()
                let client = CountersignClient(for: credential, userAgent: DeviceAgent.userAgent)
                _ = try await client.unsubscribePush(credential: credential)
                print("No more pushes to this device.")
            }
        }

        struct Key: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Print the broker's VAPID public key (applicationServerKey) and its id.")

            @OptionGroup var account: AccountOptions

            func run() async throws {
                let credential = try account.enrolledCredential()
                let key = try await CountersignClient(for: credential, userAgent: DeviceAgent.userAgent).vapidKey()
                print(key.publicKey)
                print("id \(key.keyID)")
            }
        }
    }
}
