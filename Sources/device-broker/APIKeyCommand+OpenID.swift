import ArgumentParser
import CountersignCore
import CountersignStore
import Foundation

extension DeviceBroker.APIKeyCommand {
    struct SetOpenIDScopes: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-openid-scopes",
            abstract: "Register the scopes an app signs in with by approval (none given: back to the default).",
            discussion: """
                The scopes: openid (always), profile (the user name as preferred_username and name) and email \
                (the user name, when it is an email address, as an unverified email). Registered, every \
                /oauth/authorize request with openid and no identifier_type signs in by approval, whatever \
                else its scope asks for (an app asking for openid email profile, as many do, gets what is \
                registered); not registered, the app gets openid and profile, and a scope with email or phone \
                opens the verification page instead. The app is a confidential client: it redeems its codes \
                and refreshes its tokens with its API secret (client_secret_basic or client_secret_post), as \
                RFC 6749 §3.2.1 requires; --public registers a native app or command-line tool that keeps no \
                secret, which then redeems with PKCE alone. Redirect URIs: apikey set-redirect-urls; user \
                verification: apikey set-user-verification.
                """)

        @OptionGroup var store: StoreOptions

        @Argument(help: "The API key id.")
        var apiKeyID: String

        @Argument(help: "The scopes: openid, profile, email.")
        var scopes: [String] = []

        @Flag(help: "A public client: an app that keeps no secret (a native app, a CLI) redeems with PKCE alone.")
        var `public` = false

        func validate() throws {
            if !scopes.isEmpty, let problem = OpenIDAuthorization.problem(registering: scopes) {
                throw ValidationError(problem)
            }
            if scopes.isEmpty, `public` {
                throw ValidationError("--public registers a client type with its scopes: give openid and the others")
            }
        }

        func run() async throws {
            let registered = scopes.isEmpty ? nil : OpenIDClientRegistration(scopes: scopes, isPublic: `public`)
            do {
                try await store.withStore { [apiKeyID] store in
                    try await store.setOpenIDClient(registered, apiKeyID: apiKeyID, now: Date())
                }
            } catch let error as StoreError where error.code == .notFound {
                throw ValidationError("no unrevoked API key \(apiKeyID)")
            }
            if let registered {
                let client =
                    registered.isPublic
                    ? "a public client (PKCE alone)" : "a confidential client (redeems with its API secret)"
                print("\(apiKeyID): signs in by approval with \(registered.scopes.joined(separator: " ")), \(client)")
            } else {
                print("\(apiKeyID): no sign-in scopes registered (openid profile by default)")
            }
        }
    }
}
