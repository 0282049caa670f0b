import ArgumentParser
import CountersignBroker
import CountersignCore
import CountersignStore
import Foundation

/// `device-broker keys`: the broker's token signing keys.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "List or rotate the keys the broker signs tokens with.",
        subcommands: [List.self, Rotate.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show each key and whether it signs or is published.")

        @OptionGroup var store: StoreOptions

        func run() async throws {
            let keys = try await store.withStore { try await $0.signingKeys() }
            let now = Date()
            let signing = BrokerKeys.signingKey(of: keys, now: now)
            let published = Set(BrokerKeys.publishedKeys(of: keys, now: now).map(\.id))
            for key in keys {
                let state =
                    key.id == signing.id
                    ? "signing"
                    : key.createdAt > signing.createdAt
                        ? "published, signs from \((key.createdAt + BrokerKeys.activationDelay).formatted(.iso8601))"
                        : published.contains(key.id) ? "published until old tokens expire" : "retired"
                print("\(key.id)\t\(key.createdAt.formatted(.iso8601))\t\(state)")
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a new signing key: published at once, signing after JWKS caches have it.",
            discussion: """
                Running brokers pick the key up within 30 s (at once on PostgreSQL). The new key is \
                in the JWKS at once and signs 5 minutes later, the JWKS cache lifetime; the old key \
                stays in the JWKS for an hour after that, the longest a token it signed lives.
                """)

        @OptionGroup var store: StoreOptions

        func run() async throws {
            let key = BrokerKeys.newKey(now: Date())
            try await store.withStore { try await $0.insertSigningKey(key) }
            print("New signing key \(key.id), published now.")
            print("It signs from \((key.createdAt + BrokerKeys.activationDelay).formatted(.iso8601)) on.")
        }
    }
}
