import CountersignCore
import CountersignStore
public import Foundation
import Hummingbird

/// An app backend's own API key: rotating its secret, revoking it.
struct APIKeyController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<BackendRequestContext> {
        RouteCollection(context: BackendRequestContext.self)
            .post("apikey/rotate", use: rotate)
            .post("apikey/revoke", use: revoke)
    }

    struct RotateRequest: Decodable {
        /// Seconds the replaced secret is still taken.
        var overlap: Int?
    }

    struct Rotated: Encodable, Sendable {
        let apiKeyID: String
        let apiSecretKey: String
        let previousSecretExpiresAt: Date
        enum CodingKeys: String, CodingKey {
            case apiKeyID = "api_key_id"
            case apiSecretKey = "api_secret_key"
            case previousSecretExpiresAt = "previous_secret_expires_at"
        }
    }

    struct Revoked: Encodable, Sendable {
        let apiKeyID: String
        let revokedAt: Date
        enum CodingKeys: String, CodingKey {
            case apiKeyID = "api_key_id"
            case revokedAt = "revoked_at"
        }
    }

    /// A new secret, shown once; the one it replaces is taken for `overlap`
    /// seconds more (a day by default, at most 30 days).
    @Sendable func rotate(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<Rotated> {
        var overlap = APIKeyRotation.defaultOverlap
        if request.headers[.contentLength].flatMap(Int.init).map({ $0 > 0 }) ?? false {
            let body = try await request.decodeJSON(RotateRequest.self, context: context)
            if let seconds = body.overlap { overlap = TimeInterval(seconds) }
        }
        guard (0...APIKeyRotation.maximumOverlap).contains(overlap) else {
            throw APIError.badRequest("overlap must be 0 to \(Int(APIKeyRotation.maximumOverlap)) seconds")
        }
        let rotation = APIKeyRotation(now: environment.now(), overlap: overlap)
        let key = try await environment.store.rotateAPIKeySecret(
            id: context.apiKey.id, to: rotation.digest, previousUntil: rotation.previousUntil,
            change: APIKeyChange(
                apiKeyID: context.apiKey.id, action: .rotated, via: "rest", ip: context.clientAddress,
                at: rotation.now))
        return JSONBody(
            Rotated(apiKeyID: key.id, apiSecretKey: rotation.secret, previousSecretExpiresAt: rotation.previousUntil))
    }

    /// Revokes the key at once: its secret, its id, and its devices'
    /// requests are refused from now on, by every instance.
    @Sendable func revoke(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<Revoked> {
        let now = environment.now()
        let key = try await environment.store.revokeAPIKey(
            id: context.apiKey.id,
            change: APIKeyChange(
                apiKeyID: context.apiKey.id, action: .revoked, via: "rest", ip: context.clientAddress, at: now))
        return JSONBody(Revoked(apiKeyID: key.id, revokedAt: key.revokedAt ?? now))
    }
}

/// A new API secret key, and until when the one it replaces is taken.
public struct APIKeyRotation: Sendable {
    public static let defaultOverlap: TimeInterval = 86400
    public static let maximumOverlap: TimeInterval = 30 * 86400

    /// The new secret, to show once.
    public let secret: String
    public let now: Date
    public let previousUntil: Date

    public init(now: Date, overlap: TimeInterval) {
        self.secret = APIKeyRotation.newSecret()
        self.now = now
        self.previousUntil = now + overlap
    }

    public var digest: Data { SecretToken.digest(secret) }

    /// A fresh secret key (256 bits), as `apikey create` makes them.
    public static func newSecret() -> String { "cs_" + SecretToken.generate(bytes: 32) }
}
