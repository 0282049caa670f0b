import CountersignCore
import CountersignStore
public import Foundation
import Hummingbird
import Logging

/// An app backend's own API key: reading and changing its settings,
/// rotating its secret, revoking it.
struct APIKeyController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<BackendRequestContext> {
        RouteCollection(context: BackendRequestContext.self)
            .get("apikey", use: settings)
            .patch("apikey", use: change)
            .post("apikey/rotate", use: rotate)
            .post("apikey/revoke", use: revoke)
    }

    /// The key's settings, as `GET /api/v1/apikey` shows them.
    struct Settings: Encodable, Sendable {
        let apiKeyID: String
        let name: String
        let userVerification: UserVerificationPolicy

        init(_ key: APIKey) {
            apiKeyID = key.id
            name = key.name
            userVerification = key.userVerification
        }

        enum CodingKeys: String, CodingKey {
            case name
            case apiKeyID = "api_key_id"
            case userVerification = "user_verification"
        }
    }

    /// What `PATCH /api/v1/apikey` may change; today, one setting.
    struct SettingsChange: Decodable {
        var userVerification: String?
        enum CodingKeys: String, CodingKey {
            case userVerification = "user_verification"
        }
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

    /// The calling key's settings.
    @Sendable func settings(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<Settings> {
        JSONBody(Settings(context.apiKey))
    }

    /// Sets the key's user-verification policy, audited like a rotation.
    /// `required` needs passkeys, which a broker reached only by address
    /// has not: it would refuse every event of the app, so it is refused.
    @Sendable func change(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<Settings> {
        let body = try await request.decodeJSON(SettingsChange.self, context: context)
        guard let given = body.userVerification else {
            throw APIError.badRequest("nothing to change: give user_verification (required or discouraged)")
        }
        let policy = try UserVerificationPolicy.requested(given)
        if policy == .required { _ = try environment.relyingParty() }
        let key = try await environment.store.setUserVerification(
            policy, apiKeyID: context.apiKey.id,
            change: APIKeyChange(
                apiKeyID: context.apiKey.id, action: .setting(policy), via: "rest", ip: context.clientAddress,
                at: environment.now()))
        context.logger.info(
            "API key user verification set", metadata: ["api_key": "\(key.id)", "policy": "\(policy.rawValue)"])
        return JSONBody(Settings(key))
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
