import ArgumentParser
import CountersignBroker
import CountersignCore
import CountersignStore
import Foundation

extension DeviceBroker {
    struct WebhookCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "webhook",
            abstract: "Manage the webhook endpoints apps are told of events and device changes at.",
            discussion: """
                Messages follow Standard Webhooks: webhook-id, webhook-timestamp and webhook-signature \
                (v1, HMAC-SHA256 with the endpoint's whsec_ secret). Each is retried with back-off for \
                three days; an endpoint whose every delivery failed for three days is disabled.
                """,
            subcommands: [Set.self, List.self, RotateSecret.self, Enable.self, Remove.self, Messages.self, Resend.self])
    }
}

/// What `webhook set` is given.
struct WebhookSetOptions: ParsableArguments {
    @OptionGroup var store: StoreOptions

    @Argument(help: "The API key id.")
    var apiKeyID: String

    @Argument(help: "The endpoint's URL: https, or http://127.0.0.1 (any port) for a receiver under development.")
    var url: String

    @Option(
        name: .customLong("type"),
        help: ArgumentHelp(
            "A message type to send; repeat for several (default: all).",
            discussion: WebhookType.allCases.map(\.rawValue).joined(separator: ", ")))
    var types: [String] = []

    @Flag(help: "Print the endpoint as JSON.")
    var json = false

    func validate() throws {
        if let problem = WebhookEndpoint.problem(withURL: url) { throw ValidationError(problem) }
        _ = try parsedTypes()
    }

    func parsedTypes() throws -> [WebhookType] {
        guard let types = WebhookEndpoint.types(from: types.joined(separator: ",")) else {
            throw ValidationError(
                "unknown --type; one of: \(WebhookType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return types
    }

    func run() async throws {
        let types = try parsedTypes()
        let (endpoint, secret) = try await WebhookCLI.run(store) { [apiKeyID, url] store in
            try await WebhookAdministration(store: store).set(apiKeyID: apiKeyID, url: url, types: types, now: Date())
        }
        WebhookCLI.show(endpoint, secret: secret, json: json)
    }
}

extension DeviceBroker.APIKeyCommand {
    /// The name `webhook set` had before the `webhook` commands: still
    /// taken, no longer listed, and it says so.
    struct SetWebhook: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-webhook",
            abstract: "Deprecated: `device-broker webhook set`.",
            shouldDisplay: false)

        @OptionGroup var options: WebhookSetOptions

        func run() async throws {
            FileHandle.standardError.write(
                Data("note: `apikey set-webhook` is deprecated; it is `device-broker webhook set`.\n".utf8))
            try await options.run()
        }
    }
}

extension DeviceBroker.WebhookCommand {
    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a webhook endpoint to an API key (its secret is printed once), or set its types.",
            discussion: "Given an API key's endpoint URL again, sets that endpoint's types and keeps its secret.")

        @OptionGroup var options: WebhookSetOptions

        func run() async throws { try await options.run() }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List an API key's webhook endpoints (never their secrets).",
            discussion:
                "Columns: id, URL, types (all when empty), state (active, failing since …, disabled … with why).")

        @OptionGroup var store: StoreOptions

        @Argument(help: "The API key id.")
        var apiKeyID: String

        func run() async throws {
            let endpoints = try await WebhookCLI.run(store) { [apiKeyID] in
                try await $0.webhookEndpoints(apiKeyID: apiKeyID)
            }
            for endpoint in endpoints {
                print(
                    "\(endpoint.id)\t\(endpoint.url)\t\(endpoint.types.isEmpty ? "all" : endpoint.typeList)\t\(WebhookCLI.state(of: endpoint))"
                )
            }
        }
    }

    struct RotateSecret: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-secret",
            abstract: "Give an endpoint a new secret, printed once; the old one still signs during the overlap.")

        @OptionGroup var store: StoreOptions

        @Argument(help: "The endpoint id (wh_…).")
        var endpointID: String

        @Option(help: "How long messages also carry the old secret's signature: 30m, 24h, 7d at most (0: not at all).")
        var overlap = DurationArgument(seconds: WebhookAdministration.defaultOverlap)

        @Flag(help: "Print the endpoint as JSON.")
        var json = false

        func run() async throws {
            let rotated = try await WebhookCLI.run(store) { [endpointID, overlap] store in
                try await WebhookAdministration(store: store).rotateSecret(
                    id: endpointID, of: nil, overlap: overlap.seconds, now: Date())
            }
            WebhookCLI.show(rotated.endpoint, secret: rotated.secret, json: json)
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send to a disabled endpoint again; resend its failed messages with `webhook resend`.")

        @OptionGroup var store: StoreOptions

        @Argument(help: "The endpoint id (wh_…).")
        var endpointID: String

        func run() async throws {
            let endpoint = try await WebhookCLI.run(store) { [endpointID] store in
                try await WebhookAdministration(store: store).enable(id: endpointID, of: nil)
            }
            print("\(endpoint.id): enabled")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete an endpoint; its messages not yet sent are cancelled.")

        @OptionGroup var store: StoreOptions

        @Argument(help: "The endpoint id (wh_…).")
        var endpointID: String

        func run() async throws {
            try await WebhookCLI.run(store) { [endpointID] store in
                try await WebhookAdministration(store: store).remove(id: endpointID, of: nil, now: Date())
            }
            print("\(endpointID): removed")
        }
    }

    struct Messages: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the messages to an API key's endpoints, newest first.",
            discussion: "Columns: message id, endpoint, type, state, attempts, created, and the last error.")

        @OptionGroup var store: StoreOptions

        @Argument(help: "The API key id.")
        var apiKeyID: String

        @Option(help: "Only messages in this state: queued, delivered, failed, cancelled.")
        var state: String?

        @Option(help: "At most this many.")
        var limit = 50

        func validate() throws {
            if let state, OutboxMessage.State(rawValue: state) == nil {
                throw ValidationError("--state must be queued, delivered, failed or cancelled")
            }
            guard (1...1000).contains(limit) else { throw ValidationError("--limit must be 1 to 1000") }
        }

        func run() async throws {
            let messages = try await WebhookCLI.run(store) { [apiKeyID, state, limit] store in
                try await WebhookAdministration(store: store).messages(
                    of: apiKeyID, state: state.flatMap(OutboxMessage.State.init), limit: limit)
            }
            for message in messages {
                let type = message.webhookType?.rawValue ?? "?"
                print(
                    "\(message.id)\t\(message.target)\t\(type)\t\(message.state.rawValue)\t\(message.attempts)\t\(message.createdAt.formatted(.iso8601))\t\(DisplayText.escaped(message.lastError ?? ""))"
                )
            }
        }
    }

    struct Resend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a failed message again, with the same webhook-id, for another three days.")

        @OptionGroup var store: StoreOptions

        @Argument(help: "The message id (msg_…).")
        var messageID: String

        func run() async throws {
            try await WebhookCLI.run(store) { [messageID] store in
                _ = try await WebhookAdministration(store: store).resend(messageID: messageID, of: nil, now: Date())
            }
            print("\(messageID): queued again")
        }
    }
}

/// What the webhook commands share.
enum WebhookCLI {
    /// Runs `body` on the store, a refusal becoming a one-line error.
    @discardableResult
    static func run<T: Sendable>(
        _ store: StoreOptions, _ body: @Sendable (any CountersignStore) async throws -> T
    ) async throws -> T {
        do {
            return try await store.withStore(body)
        } catch let refusal as WebhookAdministration.Refusal {
            throw ValidationError(refusal.description)
        }
    }

    static func state(of endpoint: WebhookEndpoint) -> String {
        if let disabled = endpoint.disabledAt {
            return "disabled \(disabled.formatted(.iso8601)): \(DisplayText.escaped(endpoint.disabledReason ?? ""))"
        }
        if let failing = endpoint.failingSince { return "failing since \(failing.formatted(.iso8601))" }
        return "active"
    }

    static func show(_ endpoint: WebhookEndpoint, secret: WebhookSecret?, json: Bool) {
        if json {
            var document: [String: Any] = [
                "id": endpoint.id, "api_key_id": endpoint.apiKeyID, "url": endpoint.url,
                "types": endpoint.types.map(\.rawValue),
            ]
            if let secret { document["secret"] = secret.text }
            if let until = endpoint.previousUntil { document["previous_secret_until"] = until.formatted(.iso8601) }
            try? printJSON(document)
            return
        }
        print("Webhook endpoint: \(endpoint.id)")
        print("URL:              \(endpoint.url)")
        print("Types:            \(endpoint.types.isEmpty ? "all" : endpoint.typeList)")
        if let secret {
            print("Signing secret:   \(secret.text)")
            if let until = endpoint.previousUntil {
                print("The previous secret also signs until \(until.formatted(.iso8601)).")
            }
            print("The secret is shown only this once; give it to the receiver (Standard Webhooks).")
        } else {
            print("The endpoint keeps its secret.")
        }
    }
}
