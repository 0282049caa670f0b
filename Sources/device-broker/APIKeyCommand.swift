import ArgumentParser
import CountersignCore
import CountersignSQLite
import Foundation

extension DeviceBroker {
    struct APIKeyCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apikey",
            abstract: "Manage the API keys apps use.",
            subcommands: [Create.self, List.self])
    }
}

extension DeviceBroker.APIKeyCommand {
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an API key; its secret is printed once and stored only as a hash.")

        @OptionGroup var store: StoreOptions

        @Option(help: "A name approvers see as the app's name.")
        var name: String

        @Flag(help: "Print the key as JSON.")
        var json = false

        func run() async throws {
            let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty, trimmed.count <= 128 else {
                throw ValidationError("--name must be 1 to 128 characters")
            }
            let store = try BrokerStoreOpener.open(store.dataDirectory)
            let secret = "cs_" + SecretToken.generate(bytes: 32)
            let key = APIKey(
                id: APIKey.newID(), name: trimmed, secretDigest: SecretToken.digest(secret), createdAt: Date())
            try await store.insertAPIKey(key)
            if json {
                let document = ["api_key_id": key.id, "api_secret_key": secret, "name": key.name]
                let data = try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print("API key id:     \(key.id)")
                print("API secret key: \(secret)")
                print("The secret is shown only this once; keep it on the app's backend.")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List API keys (ids and names, never secrets).")

        @OptionGroup var store: StoreOptions

        func run() async throws {
            let store = try BrokerStoreOpener.open(store.dataDirectory)
            for key in try await store.apiKeys() {
                print("\(key.id)\t\(key.name)\t\(key.createdAt.formatted(.iso8601))")
            }
        }
    }
}
