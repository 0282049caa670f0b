import ArgumentParser
import CountersignBroker
import CountersignCore
import CountersignSenders
import CountersignStore
import Foundation

/// `device-broker vapid-key`: the keys Web Push messages are signed for with.
struct VAPIDKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vapid-key",
        abstract: "List or rotate the VAPID keys (RFC 8292) that Web Push messages are sent with.",
        subcommands: [List.self, Rotate.self, Retire.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show each VAPID key, its public key, and which one new subscriptions get.")

        @OptionGroup var store: StoreOptions

        func run() async throws {
            let keys = try await store.withStore { try await $0.vapidKeys() }
            for (index, key) in keys.enumerated() {
                let state = index == keys.count - 1 ? "new subscriptions" : "its existing subscriptions"
                let publicKey = try VAPIDKey(id: key.id, pem: key.privateKeyPEM).publicKey
                print("\(key.id)\t\(key.createdAt.formatted(.iso8601))\t\(state)\t\(publicKey)")
            }
            if keys.isEmpty { print("No VAPID key yet: the broker makes one when it first starts.") }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a new VAPID key for new subscriptions.",
            discussion: """
                Push services bind each subscription to the key it was made with, so existing \
                subscriptions keep being sent with their own key; web approvers subscribe again with \
                the new one when they next open. To stop using an old key (one that may have leaked), \
                rotate, then retire the old one.
                """)

        @OptionGroup var store: StoreOptions

        func run() async throws {
            let key = VAPIDKeyring.newKey(now: Date())
            try await store.withStore { try await $0.insertVAPIDKey(key) }
            print("New VAPID key \(key.id); new subscriptions get it from now on.")
        }
    }

    struct Retire: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete an old VAPID key and the push subscriptions made with it.",
            discussion: """
                Its devices get no pushes until they subscribe again: the web approver does when it \
                next opens; a UnifiedPush subscription must be given again with `device-agent push \
                subscribe`. The newest key cannot be retired: rotate first.
                """)

        @OptionGroup var store: StoreOptions

        @Argument(help: "The key id, as `vapid-key list` shows it.")
        var id: String

        func run() async throws {
            let removed = try await store.withStore { try await $0.retireVAPIDKey(id: id) }
            let subscriptions = removed == 1 ? "subscription" : "subscriptions"
            print("Retired VAPID key \(id); \(removed) push \(subscriptions) made with it removed.")
        }
    }
}
