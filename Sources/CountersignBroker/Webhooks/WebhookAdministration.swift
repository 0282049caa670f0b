public import CountersignCore
public import CountersignStore
public import Foundation

/// What an app's operator does with its webhook endpoints, from the CLI
/// or the backend REST API alike: one set of rules for both.
public struct WebhookAdministration: Sendable {
    let store: any CountersignStore

    public init(store: any CountersignStore) {
        self.store = store
    }

    /// Why a change was refused, as a sentence for the operator.
    public struct Refusal: Error, CustomStringConvertible, Equatable {
        public enum Kind: Sendable { case invalid, notFound, conflict }
        public let kind: Kind
        public let description: String
    }

    /// An endpoint with a secret just made, to show once.
    public struct WithSecret: Sendable {
        public let endpoint: WebhookEndpoint
        public let secret: WebhookSecret
    }

    /// The longest a rotated-out secret may still be signed with.
    public static let maximumOverlap: TimeInterval = 7 * 86400
    public static let defaultOverlap: TimeInterval = 86400
    /// Endpoints per API key.
    public static let maximumEndpoints = 10

    /// Adds an endpoint for `url` with a new secret; an API key's endpoint
    /// with the same URL gets `types` instead, and keeps its secret (then
    /// the result has no secret).
    public func set(apiKeyID: String, url: String, types: [WebhookType], now: Date) async throws
        -> (endpoint: WebhookEndpoint, newSecret: WebhookSecret?)
    {
        if let problem = WebhookEndpoint.problem(withURL: url) { throw Refusal(kind: .invalid, description: problem) }
        let existing = try await store.webhookEndpoints(apiKeyID: apiKeyID)
        if var endpoint = existing.first(where: { $0.url == url }) {
            endpoint.types = types
            try await store.updateWebhookEndpoint(endpoint)
            return (endpoint, nil)
        }
        guard existing.count < Self.maximumEndpoints else {
            throw Refusal(
                kind: .conflict, description: "an API key has at most \(Self.maximumEndpoints) webhook endpoints")
        }
        let secret = WebhookSecret.generate()
        let endpoint = WebhookEndpoint(apiKeyID: apiKeyID, url: url, types: types, secret: secret, createdAt: now)
        do {
            try await store.insertWebhookEndpoint(endpoint)
        } catch let error as StoreError where error.code == .notFound {
            throw Refusal(kind: .notFound, description: "no API key \(apiKeyID)")
        }
        return (endpoint, secret)
    }

    /// A new secret for an endpoint; the one it replaces is signed with too
    /// (a second signature) for `overlap` seconds, so receivers can roll over.
    public func rotateSecret(id: String, of apiKeyID: String?, overlap: TimeInterval, now: Date) async throws
        -> WithSecret
    {
        guard (0...Self.maximumOverlap).contains(overlap) else {
            throw Refusal(kind: .invalid, description: "the overlap must be 0 to \(Int(Self.maximumOverlap)) seconds")
        }
        var endpoint = try await self.endpoint(id: id, of: apiKeyID)
        let secret = WebhookSecret.generate()
        endpoint.previousSecret = overlap > 0 ? endpoint.secret : nil
        endpoint.previousUntil = overlap > 0 ? now + overlap : nil
        endpoint.secret = secret
        try await store.updateWebhookEndpoint(endpoint)
        return WithSecret(endpoint: endpoint, secret: secret)
    }

    /// Sends to a disabled endpoint again, its failures forgotten. Its
    /// failed messages stay failed: send them again with ``resend``.
    public func enable(id: String, of apiKeyID: String?) async throws -> WebhookEndpoint {
        var endpoint = try await self.endpoint(id: id, of: apiKeyID)
        endpoint.disabledAt = nil
        endpoint.disabledReason = nil
        endpoint.failingSince = nil
        try await store.updateWebhookEndpoint(endpoint)
        return endpoint
    }

    /// Stops sending to an endpoint until it is enabled again: new events
    /// queue nothing for it, and its queued messages fail.
    public func disable(id: String, of apiKeyID: String?, reason: String, now: Date) async throws
        -> WebhookEndpoint
    {
        var endpoint = try await self.endpoint(id: id, of: apiKeyID)
        guard endpoint.disabledAt == nil else { return endpoint }
        endpoint.disabledAt = now
        endpoint.disabledReason = reason
        try await store.updateWebhookEndpoint(endpoint)
        return endpoint
    }

    /// Deletes an endpoint; its messages not yet sent are cancelled.
    public func remove(id: String, of apiKeyID: String?, now: Date) async throws {
        _ = try await endpoint(id: id, of: apiKeyID)
        try await store.deleteWebhookEndpoint(id: id, now: now)
    }

    /// The messages to an API key's endpoints, newest first.
    public func messages(of apiKeyID: String, state: OutboxMessage.State?, limit: Int) async throws
        -> [OutboxMessage]
    {
        let endpoints = try await store.webhookEndpoints(apiKeyID: apiKeyID).map(\.id)
        return try await store.outboxMessages(targets: endpoints, state: state, limit: limit)
    }

    /// Sends a failed message again, with the same id, for another three days.
    public func resend(messageID: String, of apiKeyID: String?, now: Date) async throws -> OutboxMessage {
        guard let message = try await store.outboxMessage(id: messageID), message.kind == .webhook else {
            throw Refusal(kind: .notFound, description: "no webhook message \(messageID)")
        }
        if let apiKeyID {
            // Another app's message is as unknown as one that never was;
            // a deleted endpoint's message has no app any more.
            guard let endpoint = try await store.webhookEndpoint(id: message.target), endpoint.apiKeyID == apiKeyID
            else { throw Refusal(kind: .notFound, description: "no webhook message \(messageID)") }
        }
        do {
            return try await store.resendOutboxMessage(id: messageID, now: now)
        } catch let error as StoreError where error.code == .conflict {
            throw Refusal(
                kind: .conflict, description: "message \(messageID) has not failed; only a failed one is sent again")
        }
    }

    /// The endpoint, if it is `apiKeyID`'s (any key's for nil: the CLI).
    func endpoint(id: String, of apiKeyID: String?) async throws -> WebhookEndpoint {
        guard let endpoint = try await store.webhookEndpoint(id: id), apiKeyID.map({ $0 == endpoint.apiKeyID }) ?? true
        else { throw Refusal(kind: .notFound, description: "no webhook endpoint \(id)") }
        return endpoint
    }
}
