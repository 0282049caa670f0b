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
            .get("webhooks/:app/failed", use: failedMessages)
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
        /// Every failed message of the app, counted up to ``failedCountCap``.
        let failedCount: Int
        /// The `cursor` of the next page of failed messages; nil on the last.
        let failedNext: String?
        enum CodingKeys: String, CodingKey {
            case app, endpoints, failed
            case apiKeyID = "api_key_id"
            case failedCount = "failed_count"
            case failedNext = "failed_next"
        }
    }

    /// The most failed messages an app's count goes up to.
    static let failedCountCap = 10_000

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
            let count = try await environment.store.outboxMessageCount(
                targets: endpoints.map(\.id), state: .failed, cap: Self.failedCountCap)
            apps.append(
                AppWebhooks(
                    apiKeyID: key.id, app: key.name,
                    endpoints: endpoints.map { WebhookController.EndpointDocument($0) },
                    failed: failed.map(WebhookController.MessageDocument.init), failedCount: count,
                    failedNext: failed.count == limit ? failed.last.map { PageCursor(after: $0).text } : nil))
        }
        return JSONBody(WebhooksDocument(apps: apps))
    }

    struct MessagePage: Encodable, Sendable {
        let messages: [WebhookController.MessageDocument]
        /// The `cursor` of the next (older) page; nil on the last.
        let next: String?
    }

    /// One app's failed messages, newest first, `limit` a page, from
    /// `?cursor=` (an earlier page's `next`) on.
    @Sendable func failedMessages(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        MessagePage
    > {
        let app = try context.parameters.require("app")
        let limit = try request.limit()
        var cursor: PageCursor? = nil
        if let text = request.uri.queryParameters["cursor"], !text.isEmpty {
            guard let parsed = PageCursor(text: String(text)), !parsed.id.contains("\0") else {
                throw APIError.badRequest("cursor must be the next of an earlier page", code: .invalidCursor)
            }
            cursor = parsed
        }
        let endpoints = app.contains("\0") ? [] : try await environment.store.webhookEndpoints(apiKeyID: app)
        let messages = try await environment.store.outboxMessages(
            targets: endpoints.map(\.id), state: .failed, before: cursor, limit: limit)
        return JSONBody(
            MessagePage(
                messages: messages.map(WebhookController.MessageDocument.init),
                next: messages.count == limit ? messages.last.map { PageCursor(after: $0).text } : nil))
    }
}
