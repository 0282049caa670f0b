import CountersignCore
import CountersignStore
import Foundation
import Hummingbird

/// What the console shows of users under attack and of webhooks: running
/// fraud protections, who requesters prompt most and from where, and each
/// app's webhook endpoints with their failed messages.
struct ConsoleWatchReads {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<ConsoleRequestContext> {
        RouteCollection(context: ConsoleRequestContext.self)
            .get("watch", use: watch)
            .get("webhooks", use: webhooks)
    }

    struct Protection: Encodable, Sendable {
        let apiKeyID: String
        let user: String
        let until: Date
        enum CodingKeys: String, CodingKey {
            case user, until
            case apiKeyID = "api_key_id"
        }
    }

    struct Counted: Encodable, Sendable {
        let apiKeyID: String?
        let key: String
        let count: Int
        /// The requester limit it counts against, reached when `count` is it.
        let limit: Int
        enum CodingKeys: String, CodingKey {
            case key, count, limit
            case apiKeyID = "api_key_id"
        }
    }

    struct WatchDocument: Encodable, Sendable {
        let protections: [Protection]
        let users: [Counted]
        let addresses: [Counted]
        /// The requester limits' window, over which the counts run.
        let windowSeconds: Int
        enum CodingKeys: String, CodingKey {
            case protections, users, addresses
            case windowSeconds = "window_seconds"
        }
    }

    /// Running fraud protections, and the users and addresses requesters
    /// made the most events for or from in the limits' window, with the
    /// limits: who is being bombed, and from where. `limit` rows each.
    @Sendable func watch(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<WatchDocument> {
        JSONBody(try await document(limit: try request.limit()))
    }

    /// What ``watch(_:context:)`` answers, `limit` rows of each.
    func document(limit: Int) async throws -> WatchDocument {
        let now = environment.now()
        let limits = environment.policy.pendingLimits
        let store = environment.store
        let since = now - limits.rateWindow
        let protections = try await store.activeProtections(now: now, limit: limit)
        let users = try await store.requestCounts(scope: .user, since: since, limit: limit)
        let addresses = try await store.requestCounts(scope: .address, since: since, limit: limit)
        return WatchDocument(
            protections: protections.map {
                Protection(apiKeyID: $0.issuer, user: $0.clientUserID, until: $0.until)
            },
            users: users.map {
                Counted(apiKeyID: $0.issuer, key: $0.key, count: $0.count, limit: limits.requestsPerUser)
            },
            addresses: addresses.map {
                Counted(apiKeyID: nil, key: $0.key, count: $0.count, limit: limits.requestsPerAddress)
            },
            windowSeconds: Int(limits.rateWindow))
    }

    struct AppWebhooks: Encodable, Sendable {
        let apiKeyID: String
        let app: String
        let endpoints: [WebhookController.EndpointDocument]
        let failed: [WebhookController.MessageDocument]
        enum CodingKeys: String, CodingKey {
            case app, endpoints, failed
            case apiKeyID = "api_key_id"
        }
    }

    struct WebhooksDocument: Encodable, Sendable { let apps: [AppWebhooks] }

    /// Each app's endpoints (health: failing since, disabled) and its
    /// latest `limit` failed messages, never a secret.
    @Sendable func webhooks(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        WebhooksDocument
    > {
        let limit = try request.limit()
        let administration = WebhookAdministration(store: environment.store)
        var apps: [AppWebhooks] = []
        for key in try await environment.store.apiKeys() {
            let endpoints = try await environment.store.webhookEndpoints(apiKeyID: key.id)
            guard !endpoints.isEmpty else { continue }
            let failed = try await administration.messages(of: key.id, state: .failed, limit: limit)
            apps.append(
                AppWebhooks(
                    apiKeyID: key.id, app: key.name,
                    endpoints: endpoints.map { WebhookController.EndpointDocument($0) },
                    failed: failed.map(WebhookController.MessageDocument.init)))
        }
        return JSONBody(WebhooksDocument(apps: apps))
    }
}
