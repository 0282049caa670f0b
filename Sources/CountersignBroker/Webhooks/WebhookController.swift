import CountersignCore
import CountersignStore
import Foundation
import Hummingbird

/// An app backend's own webhook endpoints and their messages, under its
/// API key: the same rules as `device-broker webhook` (``WebhookAdministration``).
struct WebhookController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<BackendRequestContext> {
        RouteCollection(context: BackendRequestContext.self)
            .get("webhooks", use: list)
            .post("webhooks", use: set)
            .get("webhooks/messages", use: messages)
            .post("webhooks/messages/:id/resend", use: resend)
            .post("webhooks/:id/rotate-secret", use: rotate)
            .post("webhooks/:id/enable", use: enable)
            .delete("webhooks/:id", use: remove)
    }

    var administration: WebhookAdministration { WebhookAdministration(store: environment.store) }

    /// An endpoint as the API shows it; its secret only when just made.
    struct EndpointDocument: Encodable, Sendable {
        let id: String
        let url: String
        let types: [String]
        let createdAt: Date
        let failingSince: Date?
        let disabledAt: Date?
        let disabledReason: String?
        let previousSecretUntil: Date?
        let secret: String?

        init(_ endpoint: WebhookEndpoint, secret: WebhookSecret? = nil) {
            id = endpoint.id
            url = endpoint.url
            types = endpoint.types.map(\.rawValue)
            createdAt = endpoint.createdAt
            failingSince = endpoint.failingSince
            disabledAt = endpoint.disabledAt
            disabledReason = endpoint.disabledReason
            previousSecretUntil = endpoint.previousUntil
            self.secret = secret?.text
        }

        enum CodingKeys: String, CodingKey {
            case id, url, types, secret
            case createdAt = "created_at"
            case failingSince = "failing_since"
            case disabledAt = "disabled_at"
            case disabledReason = "disabled_reason"
            case previousSecretUntil = "previous_secret_until"
        }
    }

    struct EndpointList: Encodable, Sendable {
        let endpoints: [EndpointDocument]
    }

    /// A message as the API shows it (its body is what the endpoint gets).
    struct MessageDocument: Encodable, Sendable {
        let id: String
        let endpointID: String
        let type: String?
        let eventID: String?
        let state: String
        let attempts: Int
        let createdAt: Date
        let nextAttemptAt: Date?
        let finishedAt: Date?
        let lastError: String?

        init(_ message: OutboxMessage) {
            id = message.id
            endpointID = message.target
            type = message.webhookType?.rawValue
            eventID = message.eventID
            state = message.state.rawValue
            attempts = message.attempts
            createdAt = message.createdAt
            nextAttemptAt = message.state == .queued ? message.nextAttemptAt : nil
            finishedAt = message.finishedAt
            lastError = message.lastError
        }

        enum CodingKeys: String, CodingKey {
            case id, type, state, attempts
            case endpointID = "endpoint_id"
            case eventID = "event_id"
            case createdAt = "created_at"
            case nextAttemptAt = "next_attempt_at"
            case finishedAt = "finished_at"
            case lastError = "last_error"
        }
    }

    struct MessageList: Encodable, Sendable {
        let messages: [MessageDocument]
    }

    struct SetRequest: Decodable {
        let url: String
        /// Left out: every type. `null` is refused, as the schema says.
        let types: [String]?

        enum CodingKeys: String, CodingKey { case url, types }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            url = try container.decode(String.self, forKey: .url)
            if container.contains(.types), try container.decodeNil(forKey: .types) {
                throw DecodingError.valueNotFound(
                    [String].self,
                    .init(codingPath: [CodingKeys.types], debugDescription: "types is a list, not null"))
            }
            types = try container.decodeIfPresent([String].self, forKey: .types)
        }
    }

    struct RotateRequest: Decodable {
        /// Seconds the replaced secret still signs.
        let overlap: Int?
    }

    @Sendable func list(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<EndpointList> {
        let endpoints = try await environment.store.webhookEndpoints(apiKeyID: context.apiKey.id)
        return JSONBody(EndpointList(endpoints: endpoints.map { EndpointDocument($0) }))
    }

    /// A new endpoint (201, with its secret), or new types for the key's
    /// endpoint with that URL (200, no secret).
    @Sendable func set(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<EndpointDocument> {
        let body = try await request.decodeJSON(SetRequest.self, context: context)
        guard let types = WebhookEndpoint.types(from: (body.types ?? []).joined(separator: ",")) else {
            throw APIError.badRequest(
                "types must be some of \(WebhookType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let (endpoint, secret) = try await refusing {
            try await administration.set(
                apiKeyID: context.apiKey.id, url: body.url, types: types, now: environment.now())
        }
        return JSONBody(EndpointDocument(endpoint, secret: secret), status: secret == nil ? .ok : .created)
    }

    @Sendable func rotate(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<EndpointDocument>
    {
        var overlap = WebhookAdministration.defaultOverlap
        if request.headers[.contentLength].flatMap(Int.init).map({ $0 > 0 }) ?? false {
            if let seconds = try await request.decodeJSON(RotateRequest.self, context: context).overlap {
                overlap = TimeInterval(seconds)
            }
        }
        let id = try context.parameters.require("id")
        let rotated = try await refusing {
            try await administration.rotateSecret(
                id: id, of: context.apiKey.id, overlap: overlap, now: environment.now())
        }
        return JSONBody(EndpointDocument(rotated.endpoint, secret: rotated.secret))
    }

    @Sendable func enable(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<EndpointDocument>
    {
        let id = try context.parameters.require("id")
        let endpoint = try await refusing { try await administration.enable(id: id, of: context.apiKey.id) }
        return JSONBody(EndpointDocument(endpoint))
    }

    @Sendable func remove(_ request: Request, context: BackendRequestContext) async throws -> Response {
        let id = try context.parameters.require("id")
        try await refusing { try await administration.remove(id: id, of: context.apiKey.id, now: environment.now()) }
        return Response(status: .noContent)
    }

    @Sendable func messages(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<MessageList> {
        var state: OutboxMessage.State? = nil
        if let text = request.uri.queryParameters["state"] {
            guard let parsed = OutboxMessage.State(rawValue: String(text)) else {
                throw APIError.badRequest("state must be queued, delivered, failed or cancelled")
            }
            state = parsed
        }
        let messages = try await administration.messages(of: context.apiKey.id, state: state, limit: request.limit())
        return JSONBody(MessageList(messages: messages.map(MessageDocument.init)))
    }

    @Sendable func resend(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<MessageDocument>
    {
        let id = try context.parameters.require("id")
        let message = try await refusing {
            try await administration.resend(messageID: id, of: context.apiKey.id, now: environment.now())
        }
        environment.hub.notify(WakeKey.outbox)
        return JSONBody(MessageDocument(message))
    }

}

extension WebhookAdministration.Refusal {
    /// The refusal as the API answers it.
    var apiError: APIError {
        switch kind {
        case .invalid: APIError.badRequest(description)
        case .notFound: APIError.notFound(description)
        case .conflict: APIError.conflict(.conflict, description)
        }
    }
}

/// Runs `body`, an operator's refusal becoming the API's error.
func refusing<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let refusal as WebhookAdministration.Refusal {
        throw refusal.apiError
    }
}
