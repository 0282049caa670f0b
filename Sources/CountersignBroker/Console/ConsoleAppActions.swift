import CountersignCore
import CountersignStore
import Foundation
import Hummingbird

/// What an operator does to apps from the console: API keys made,
/// rotated and revoked (a secret shown once), and webhook endpoints and
/// messages. Each is confirmed on the page and audited once done.
struct ConsoleAppActions {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<ConsoleRequestContext> {
        RouteCollection(context: ConsoleRequestContext.self)
            .post("apps", use: createApp)
            .post("apps/:app/rotate", use: rotateApp)
            .post("apps/:app/revoke", use: revokeApp)
            .post("webhook-endpoints/:endpoint/disable", use: disableEndpoint)
            .post("webhook-endpoints/:endpoint/enable", use: enableEndpoint)
            .post("webhook-messages/:message/resend", use: resendMessage)
    }

    struct CreateRequest: Decodable {
        let name: String?
    }

    /// A key with its secret, shown this once.
    struct KeyWithSecret: Encodable, Sendable {
        let apiKeyID: String
        let apiSecretKey: String
        let name: String?
        let previousSecretExpiresAt: Date?
        enum CodingKeys: String, CodingKey {
            case name
            case apiKeyID = "api_key_id"
            case apiSecretKey = "api_secret_key"
            case previousSecretExpiresAt = "previous_secret_expires_at"
        }
    }

    @Sendable func createApp(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        KeyWithSecret
    > {
        let body = try await request.decodeJSON(CreateRequest.self, context: context)
        let name = try DisplayText.Field.appName.require(body.name ?? "")
        let secret = APIKeyRotation.newSecret()
        let now = environment.now()
        let key = APIKey(id: APIKey.newID(), name: name, secretDigest: SecretToken.digest(secret), createdAt: now)
        try await environment.store.insertAPIKey(key)
        try await environment.store.recordAPIKeyChange(
            APIKeyChange(apiKeyID: key.id, action: .created, via: via(context), ip: context.clientAddress, at: now))
        try await audit(.apiKeyCreated, target: key.id, context: context)
        return JSONBody(
            KeyWithSecret(apiKeyID: key.id, apiSecretKey: secret, name: name, previousSecretExpiresAt: nil),
            status: .created)
    }

    /// A new secret; the old one is taken for a day more, as with the CLI.
    @Sendable func rotateApp(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        KeyWithSecret
    > {
        let id = try appID(context)
        let rotation = APIKeyRotation(now: environment.now(), overlap: APIKeyRotation.defaultOverlap)
        do {
            _ = try await environment.store.rotateAPIKeySecret(
                id: id, to: rotation.digest, previousUntil: rotation.previousUntil,
                change: APIKeyChange(
                    apiKeyID: id, action: .rotated, via: via(context), ip: context.clientAddress, at: rotation.now))
        } catch let error as StoreError where error.code == .notFound {
            throw APIError.notFound("no unrevoked API key \(id)")
        }
        try await audit(.apiKeyRotated, target: id, context: context)
        return JSONBody(
            KeyWithSecret(
                apiKeyID: id, apiSecretKey: rotation.secret, name: nil,
                previousSecretExpiresAt: rotation.previousUntil))
    }

    @Sendable func revokeApp(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        ConsoleReads.AppDocument
    > {
        let id = try appID(context)
        let now = environment.now()
        let key: APIKey
        do {
            key = try await environment.store.revokeAPIKey(
                id: id,
                change: APIKeyChange(
                    apiKeyID: id, action: .revoked, via: via(context), ip: context.clientAddress, at: now))
        } catch let error as StoreError where error.code == .notFound {
            throw APIError.notFound("no unrevoked API key \(id)")
        }
        try await audit(.apiKeyRevoked, target: id, context: context)
        return JSONBody(ConsoleReads.AppDocument(key))
    }

    @Sendable func disableEndpoint(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        WebhookController.EndpointDocument
    > {
        let id = try context.parameters.require("endpoint")
        let endpoint = try await refusing {
            try await WebhookAdministration(store: environment.store).disable(
                id: id, of: nil, reason: "disabled by \(context.signedIn.name) in the console", now: environment.now())
        }
        try await audit(.endpointDisabled, target: id, context: context)
        return JSONBody(WebhookController.EndpointDocument(endpoint))
    }

    @Sendable func enableEndpoint(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        WebhookController.EndpointDocument
    > {
        let id = try context.parameters.require("endpoint")
        let endpoint = try await refusing {
            try await WebhookAdministration(store: environment.store).enable(id: id, of: nil)
        }
        try await audit(.endpointEnabled, target: id, context: context)
        return JSONBody(WebhookController.EndpointDocument(endpoint))
    }

    @Sendable func resendMessage(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        WebhookController.MessageDocument
    > {
        let id = try context.parameters.require("message")
        let message = try await refusing {
            try await WebhookAdministration(store: environment.store).resend(
                messageID: id, of: nil, now: environment.now())
        }
        environment.hub.notify(WakeKey.outbox)
        try await audit(.webhookResent, target: id, context: context)
        return JSONBody(WebhookController.MessageDocument(message))
    }

    /// The app the path names; never the console's own, whose key the
    /// console's sign-in needs.
    private func appID(_ context: ConsoleRequestContext) throws -> String {
        let id = try context.parameters.require("app")
        try ConsoleActions.refuseAtConsole(id)
        return id
    }

    private func via(_ context: ConsoleRequestContext) -> String { "console:" + context.signedIn.name }

    private func audit(_ action: AuditRecord.Action, target: String, context: ConsoleRequestContext) async throws {
        try await ConsoleActions.audit(action, target: target, context: context, in: environment)
    }
}
