import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird
import JWTKit

/// `POST /api/v0/verify/get_identity`: the app redeems the authorization
/// code from the hosted page with its PKCE verifier, and gets the verified
/// identifier and OAuth tokens, in the original API's response shape.
struct IdentityController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<AppRequestContext> {
        RouteCollection(context: AppRequestContext.self)
            .post("verify/get_identity", use: getIdentity)
    }

    /// The original API's error body, with Countersign's code beside it.
    struct Failure: Encodable, Sendable {
        let msg: String
        let error: ErrorCode
        let message: String
    }

    @Sendable func getIdentity(_ request: Request, context: AppRequestContext) async throws -> Response {
        let key = context.apiKey
        let body = try await request.decodeJSON(VerifiedCode.self, context: context)
        let withTokens = request.uri.queryParameters["oauth_token"].map { $0 == "true" } ?? false
        func refuse(_ msg: String, _ message: String, status: HTTPResponse.Status = .badRequest) throws -> Response {
            try JSONBody(Failure(msg: msg, error: .invalidGrant, message: message), status: status)
                .response(from: request, context: context)
        }
        let redeemed: VerificationChallenge
        do {
            redeemed = try await CodeRedemption(environment: environment).redeem(body, apiKeyID: key.id)
        } catch let failure as CodeRedemption.Failure {
            return try refuse(failure.identityMessage, failure.explanation)
        }
        let now = environment.now()
        let identity = try await environment.store.verifiedIdentity(
            apiKeyID: key.id, type: redeemed.identifierType, identifier: redeemed.identifier, now: now)
        let tokens =
            withTokens
            ? try await OAuthTokenIssuer(environment: environment)
                .issue(for: identity, family: CodeRedemption.family(of: redeemed), authTime: redeemed.verifiedAt ?? now)
            : nil
        let document = IdentityDocument(
            identity: identity, challenge: redeemed, tokens: tokens,
            token: try await identityToken(identity, now: now))
        return try JSONBody(document).response(from: request, context: context)
    }

    /// A signed statement of the verified identifier.
    private func identityToken(_ identity: VerifiedIdentity, now: Date) async throws -> IdentityDocument.Token {
        let expiry = now + IdentityDocument.validity
        struct Claims: JWTPayload {
            let iss, sub, aud, identifier, identifierType: String
            let iat, exp: Int
            enum CodingKeys: String, CodingKey {
                case iss, sub, aud, identifier, iat, exp
                case identifierType = "identifier_type"
            }
            func verify(using _: some JWTAlgorithm) async throws {}
        }
        let signature = try await environment.keys.sign(
            Claims(
                iss: environment.issuer, sub: identity.id, aud: identity.apiKeyID, identifier: identity.identifier,
                identifierType: identity.identifierType.rawValue, iat: Int(now.timeIntervalSince1970),
                exp: Int(expiry.timeIntervalSince1970)))
        return .init(
            identifierID: identity.id, identifier: identity.identifier, identifierType: identity.identifierType,
            receiver: identity.apiKeyID, expireAt: String(Int(expiry.timeIntervalSince1970)), signature: signature)
    }
}

/// The `get_identity` answer, in the original API's shape.
struct IdentityDocument: Encodable, Sendable {
    static let validity: TimeInterval = 30 * 86400
    /// The original API's "never deleted" time.
    static let notDeleted = "0001-01-01T00:00:00Z"

    struct Identifier: Encodable, Sendable {
        let ID: String
        let createdAt: Date
        let updatedAt: Date
        let deletedAt = IdentityDocument.notDeleted
        let identifier: String
        let identifierType: IdentifierType
        let deviceType = "BROWSER"
        let deviceName: String
        let expiry: Date
        let timestamp: Date

        enum CodingKeys: String, CodingKey {
            case ID, identifier, expiry, timestamp
            case createdAt = "created_at"
            case updatedAt = "updated_at"
            case deletedAt = "deleted_at"
            case identifierType = "identifier_type"
            case deviceType = "device_type"
            case deviceName = "device_name"
        }
    }

    struct Token: Encodable, Sendable {
        let identifierID: String
        let identifier: String
        let identifierType: IdentifierType
        let receiver: String
        let expireAt: String
        /// An ES256 JWT of the same facts, verifiable with the JWKS.
        let signature: String

        enum CodingKeys: String, CodingKey {
            case identifier, receiver, signature
            case identifierID = "identifier_id"
            case identifierType = "identifier_type"
            case expireAt = "expire_at"
        }
    }

    struct User: Encodable, Sendable {
        let ID: String
        let issuer: String
        let identifier: String
        let identifierType: IdentifierType
        let createdAt: Date
        let updatedAt: Date
        let deletedAt = IdentityDocument.notDeleted

        enum CodingKeys: String, CodingKey {
            case ID, issuer, identifier
            case identifierType = "identifier_type"
            case createdAt = "created_at"
            case updatedAt = "updated_at"
            case deletedAt = "deleted_at"
        }
    }

    let identifier: Identifier
    let oauthToken: OAuthTokens?
    let token: Token
    let user: User

    enum CodingKeys: String, CodingKey {
        case identifier, token, user
        case oauthToken = "oauth_token"
    }

    init(identity: VerifiedIdentity, challenge: VerificationChallenge, tokens: OAuthTokens?, token: Token) {
        let verifiedAt = challenge.verifiedAt ?? identity.updatedAt
        identifier = Identifier(
            ID: identity.id, createdAt: identity.createdAt, updatedAt: identity.updatedAt,
            identifier: identity.identifier, identifierType: identity.identifierType,
            deviceName: challenge.userAgent, expiry: verifiedAt + Self.validity, timestamp: verifiedAt)
        oauthToken = tokens
        self.token = token
        user = User(
            ID: identity.userID, issuer: identity.apiKeyID, identifier: identity.identifier,
            identifierType: identity.identifierType, createdAt: identity.createdAt, updatedAt: identity.updatedAt)
    }
}
