public import ArgumentParser
public import CountersignCore
import CountersignStore
import Foundation

extension DeviceBroker.APIKeyCommand {
    struct SetUserVerification: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-user-verification",
            abstract: "Set whether every event of an API key requires user verification (a passkey).",
            discussion: """
                required: every event made under the key, pairings and CIBA requests included, is approved only \
                with the deciding device's passkey, its owner verified, whatever the request says; a trusted \
                device's own request is then pending too, not approved at once. discouraged (the default): each \
                request says (user_verification). Under required, making recovery codes and removing another \
                device also take the device's passkey, and codes finish no login. Passkeys need the broker's \
                public URL to name a domain (localhost on one machine): on a broker reached only by address, \
                every event of a required key is refused. Takes effect at once on every instance; audited \
                (apikey audit).
                """)

        @OptionGroup var store: StoreOptions

        @Argument(help: "The API key id.")
        var apiKeyID: String

        @Argument(help: "required or discouraged.")
        var policy: UserVerificationPolicy

        func run() async throws {
            let change = APIKeyChange(apiKeyID: apiKeyID, action: .setting(policy), via: "cli", at: Date())
            do {
                _ = try await store.withStore { [apiKeyID, policy] store in
                    try await store.setUserVerification(policy, apiKeyID: apiKeyID, change: change)
                }
            } catch let error as StoreError where error.code == .notFound {
                throw ValidationError("no unrevoked API key \(apiKeyID)")
            }
            print("\(apiKeyID): user verification \(policy.rawValue)")
        }
    }
}

extension UserVerificationPolicy: ExpressibleByArgument {}
