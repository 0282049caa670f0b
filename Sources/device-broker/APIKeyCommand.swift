import ArgumentParser
import CountersignCore
import CountersignSQLite
import CountersignStore
import Foundation

extension DeviceBroker {
    struct APIKeyCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apikey",
            abstract: "Manage the API keys apps use.",
            subcommands: [
                Create.self, List.self, SetRedirectURLs.self, SetWebhook.self, SetCIBAPing.self,
                SetUserVerification.self, SetOpenIDScopes.self, Rotate.self, Revoke.self, Audit.self,
            ])
    }
}

extension DeviceBroker.APIKeyCommand {
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an API key; its secret is printed once and stored only as a hash.")

        @OptionGroup var store: StoreOptions

        @Option(help: "A name approvers see as the app's name.")
        var name: String

        @Option(
            name: .customLong("redirect-url"),
            help: "Where the hosted verification page may send users back to; repeat for several.")
        var redirectURLs: [String] = []

        @Option(
            help: """
                required: every event of the app is approved only with a device's passkey, its owner verified, \
                whatever the request says (set-user-verification changes it).
                """)
        var userVerification = UserVerificationPolicy.discouraged

        @Flag(help: "Print the key as JSON.")
        var json = false

        func validate() throws { try RedirectURLArguments.validate(redirectURLs) }

        func run() async throws {
            // Approvers read it as the app's name.
            let trimmed: String
            switch DisplayText.check(name, as: .appName) {
            case .success(let stored): trimmed = stored
            case .failure(let refusal): throw ValidationError(refusal.message(field: "--name"))
            }
            let secret = "cs_" + SecretToken.generate(bytes: 32)
            let key = APIKey(
                id: APIKey.newID(), name: trimmed, secretDigest: SecretToken.digest(secret), createdAt: Date(),
                userVerification: userVerification)
            try await store.withStore { [redirectURLs] store in
                try await store.insertAPIKey(key)
                try await store.recordAPIKeyChange(
                    APIKeyChange(apiKeyID: key.id, action: .created, via: "cli", at: key.createdAt))
                try await store.setRedirectURLs(redirectURLs, apiKeyID: key.id)
            }
            if json {
                let document: [String: Any] = [
                    "api_key_id": key.id, "api_secret_key": secret, "name": key.name, "redirect_urls": redirectURLs,
                    "user_verification": key.userVerification.rawValue,
                ]
                try printJSON(document)
            } else {
                print("API key id:     \(key.id)")
                print("API secret key: \(secret)")
                print("The secret is shown only this once; keep it on the app's backend.")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List API keys (ids, names, state; never secrets).",
            discussion: """
                One tab-separated row per key under a header: id, name, created, state (active, \
                rotating until …, revoked …), redirect URLs, user verification (required or discouraged).
                """)

        @OptionGroup var store: StoreOptions

        @Flag(help: "Leave out the header line, for scripts.")
        var noHeader = false

        func run() async throws {
            try await store.withStore { store in
                let now = Date()
                let keys = try await store.apiKeys()
                guard !keys.isEmpty else {
                    print("No API keys yet: device-broker apikey create --name NAME makes one.")
                    return
                }
                if !noHeader { print("ID\tNAME\tCREATED\tSTATE\tREDIRECT URLS\tUSER VERIFICATION") }
                for key in keys {
                    let urls = try await store.redirectURLs(apiKeyID: key.id).joined(separator: " ")
                    let state = Self.state(of: key, at: now)
                    print(
                        "\(key.id)\t\(key.name)\t\(key.createdAt.formatted(.iso8601))\t\(state)\t\(urls)\t\(key.userVerification.rawValue)"
                    )
                }
            }
        }

        static func state(of key: APIKey, at now: Date) -> String {
            if let revoked = key.revokedAt { return "revoked \(revoked.formatted(.iso8601))" }
            if let until = key.previousSecretExpiresAt, until > now {
                return "active, previous secret taken until \(until.formatted(.iso8601))"
            }
            return "active"
        }
    }

    struct SetRedirectURLs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-redirect-urls",
            abstract: "Replace the redirect URLs registered for an API key (none given: remove all).")

        @OptionGroup var store: StoreOptions

        @Argument(help: "The API key id.")
        var apiKeyID: String

        @Argument(help: "The redirect URLs: https, http://127.0.0.1 (any port), or com.example.app:/path.")
        var redirectURLs: [String] = []

        func validate() throws { try RedirectURLArguments.validate(redirectURLs) }

        func run() async throws {
            do {
                try await store.withStore { [redirectURLs, apiKeyID] store in
                    try await store.setRedirectURLs(redirectURLs, apiKeyID: apiKeyID)
                }
            } catch let error as StoreError where error.code == .notFound {
                throw ValidationError("no API key \(apiKeyID)")
            } catch let error as StoreError where error.code == .alreadyExists {
                throw ValidationError("a redirect URL is given twice")
            }
            print("\(apiKeyID): \(redirectURLs.count) redirect URL(s) registered")
        }
    }
}

extension DeviceBroker.APIKeyCommand {
    struct SetCIBAPing: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-ciba-ping",
            abstract: "Register an API key as a CIBA client in ping mode, notified at a URL (--poll: back to polling).",
            discussion: """
                In ping mode every /oauth/bc-authorize request must carry a client_notification_token; when the \
                user answers (or the request runs out) the broker POSTs {"auth_req_id": …} to the URL with that \
                token as a bearer token, through the outbox, and the client then calls the token endpoint.
                """)

        @OptionGroup var store: StoreOptions

        @Argument(help: "The API key id.")
        var apiKeyID: String

        @Argument(help: "The client's notification endpoint: https, or http to 127.0.0.1, [::1] or localhost.")
        var url: String?

        @Flag(help: "Return the client to the poll mode.")
        var poll = false

        func validate() throws {
            switch (url, poll) {
            case (nil, false): throw ValidationError("give the notification endpoint's URL, or --poll")
            case (.some, true): throw ValidationError("give a URL or --poll, not both")
            case (let url?, false):
                if let problem = WebhookEndpoint.problem(withURL: url, what: "notification endpoint") {
                    throw ValidationError(problem)
                }
            case (nil, true): break
            }
        }

        func run() async throws {
            do {
                try await store.withStore { [url, apiKeyID] store in
                    try await store.setCIBANotificationEndpoint(url, apiKeyID: apiKeyID, now: Date())
                }
            } catch let error as StoreError where error.code == .notFound {
                throw ValidationError("no API key \(apiKeyID), or it is revoked")
            }
            print(url.map { "\(apiKeyID): CIBA ping mode, notified at \($0)" } ?? "\(apiKeyID): CIBA poll mode")
        }
    }
}

enum RedirectURLArguments {
    static func validate(_ urls: [String]) throws {
        for url in urls {
            if let problem = RedirectURL.problem(registering: url) {
                throw ValidationError("--redirect-url \(url): \(problem.rawValue)")
            }
        }
        guard Set(urls).count == urls.count else { throw ValidationError("a redirect URL is given twice") }
    }
}
