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
                opens the verification page instead. Redirect URIs: apikey set-redirect-urls; user \
                verification: apikey set-user-verification.
                """)

        @OptionGroup var store: StoreOptions

        @Argument(help: "The API key id.")
        var apiKeyID: String

        @Argument(help: "The scopes: openid, profile, email.")
        var scopes: [String] = []

        func validate() throws {
            if !scopes.isEmpty, let problem = OpenIDAuthorization.problem(registering: scopes) {
                throw ValidationError(problem)
            }
        }

        func run() async throws {
            let registered = scopes.isEmpty ? nil : scopes
            do {
                try await store.withStore { [apiKeyID] store in
                    try await store.setOpenIDScopes(registered, apiKeyID: apiKeyID, now: Date())
                }
            } catch let error as StoreError where error.code == .notFound {
                throw ValidationError("no unrevoked API key \(apiKeyID)")
            }
            if let registered {
                print("\(apiKeyID): signs in by approval with \(registered.joined(separator: " "))")
            } else {
                print("\(apiKeyID): no sign-in scopes registered (openid profile by default)")
            }
        }
    }
}
