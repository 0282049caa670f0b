import ArgumentParser
import CountersignBroker
import CountersignCore
import CountersignStore
import Foundation

extension DeviceBroker.APIKeyCommand {
    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give an API key a new secret, printed once; the old one works for --overlap more.",
            discussion: """
                The key id stays the same. Put the new secret on the app's backends within the overlap; \
                after it, the old secret is refused. A second rotation ends the previous old secret at once.
                """)

        @OptionGroup var store: StoreOptions

        @Argument(help: "The API key id.")
        var apiKeyID: String

        @Option(help: "How long the old secret still works, e.g. 1h, 24h, 0s (at most 30d).")
        var overlap = DurationArgument(seconds: APIKeyRotation.defaultOverlap)

        @Flag(help: "Print the new secret as JSON.")
        var json = false

        func validate() throws {
            guard overlap.seconds <= APIKeyRotation.maximumOverlap else {
                throw ValidationError("--overlap may be at most 30d")
            }
            if let refusal = ConsoleApp.refusal(of: .secret, apiKeyID: apiKeyID) { throw ValidationError(refusal) }
        }

        func run() async throws {
            let rotation = APIKeyRotation(now: Date(), overlap: overlap.seconds)
            do {
                _ = try await store.withStore { [apiKeyID] store in
                    try await store.rotateAPIKeySecret(
                        id: apiKeyID, to: rotation.digest, previousUntil: rotation.previousUntil,
                        change: APIKeyChange(apiKeyID: apiKeyID, action: .rotated, via: "cli", at: rotation.now))
                }
            } catch let error as StoreError where error.code == .notFound {
                throw ValidationError("no unrevoked API key \(apiKeyID)")
            }
            if json {
                let document: [String: Any] = [
                    "api_key_id": apiKeyID, "api_secret_key": rotation.secret,
                    "previous_secret_expires_at": rotation.previousUntil.formatted(.iso8601),
                ]
                let data = try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print("API key id:     \(apiKeyID)")
                print("API secret key: \(rotation.secret)")
                print(
                    "The old secret works until \(rotation.previousUntil.formatted(.iso8601)); this one is shown only once."
                )
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke an API key at once: its secret, its id and its devices are refused from now on.",
            discussion: "Every instance on the same store refuses it at once. It cannot be undone.")

        @OptionGroup var store: StoreOptions

        @Argument(help: "The API key id.")
        var apiKeyID: String

        @Flag(help: "Do not ask for confirmation.")
        var yes = false

        func run() async throws {
            if !yes {
                FileHandle.standardError.write(Data("Revoke \(apiKeyID) for good? Type its id to confirm: ".utf8))
                guard readLine()?.trimmingCharacters(in: .whitespaces) == apiKeyID else {
                    throw ValidationError("not confirmed; nothing was revoked (--yes skips the question)")
                }
            }
            do {
                _ = try await store.withStore { [apiKeyID] store in
                    try await store.revokeAPIKey(
                        id: apiKeyID, change: APIKeyChange(apiKeyID: apiKeyID, action: .revoked, via: "cli", at: Date())
                    )
                }
            } catch let error as StoreError where error.code == .notFound {
                throw ValidationError("no unrevoked API key \(apiKeyID)")
            }
            print("Revoked \(apiKeyID).")
        }
    }

    struct Audit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List an API key's creation, rotations and revocation: when, how and from where.")

        @OptionGroup var store: StoreOptions

        @Argument(help: "The API key id.")
        var apiKeyID: String

        func run() async throws {
            let changes = try await store.withStore { [apiKeyID] store in try await store.apiKeyChanges(id: apiKeyID) }
            guard !changes.isEmpty else { throw ValidationError("no changes recorded for \(apiKeyID)") }
            for change in changes {
                print("\(change.at.formatted(.iso8601))\t\(change.action.rawValue)\t\(change.via)\t\(change.ip ?? "-")")
            }
        }
    }
}
