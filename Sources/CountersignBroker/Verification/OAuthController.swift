import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird

/// The standard OAuth 2.0 / OpenID Connect face of the verification flow:
/// discovery, and the token endpoint for public clients (PKCE, no secret).
struct OAuthController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<BrokerRequestContext> {
        RouteCollection(context: BrokerRequestContext.self)
            .get(".well-known/openid-configuration", use: discovery)
            .post("oauth/token", use: token)
    }

    struct Discovery: Encodable, Sendable {
        let issuer: String
        let authorizationEndpoint: String
        let tokenEndpoint: String
        let jwksURI: String
        let responseTypesSupported = ["code"]
        let grantTypesSupported = ["authorization_code", "refresh_token"]
        let codeChallengeMethodsSupported = ["S256"]
        let tokenEndpointAuthMethodsSupported = ["none"]
        let subjectTypesSupported = ["public"]
        let idTokenSigningAlgValuesSupported = ["ES256"]
        let scopesSupported = ["openid", "email", "phone"]
        let claimsSupported = [
            "iss", "sub", "aud", "exp", "iat", "auth_time", "email", "email_verified", "phone_number",
            "phone_number_verified",
        ]

        enum CodingKeys: String, CodingKey {
            case issuer
            case authorizationEndpoint = "authorization_endpoint"
            case tokenEndpoint = "token_endpoint"
            case jwksURI = "jwks_uri"
            case responseTypesSupported = "response_types_supported"
            case grantTypesSupported = "grant_types_supported"
            case codeChallengeMethodsSupported = "code_challenge_methods_supported"
            case tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
            case subjectTypesSupported = "subject_types_supported"
            case idTokenSigningAlgValuesSupported = "id_token_signing_alg_values_supported"
            case scopesSupported = "scopes_supported"
            case claimsSupported = "claims_supported"
        }
    }

    @Sendable func discovery(_ request: Request, context: BrokerRequestContext) async throws -> JSONBody<Discovery> {
        let issuer = environment.issuer
        return JSONBody(
            Discovery(
                issuer: issuer, authorizationEndpoint: issuer + "/oauth/authorize",
                tokenEndpoint: issuer + "/oauth/token", jwksURI: issuer + "/.well-known/jwks.json"),
            headers: [.cacheControl: "public, max-age=300"])
    }

    struct TokenForm: Decodable {
        var grantType: String?
        var code: String?
        var redirectURI: String?
        var clientID: String?
        var codeVerifier: String?
        var refreshToken: String?

        enum CodingKeys: String, CodingKey {
            case code
            case grantType = "grant_type"
            case redirectURI = "redirect_uri"
            case clientID = "client_id"
            case codeVerifier = "code_verifier"
            case refreshToken = "refresh_token"
        }
    }

    /// RFC 6749 §5.1 success body.
    struct TokenResponse: Encodable, Sendable {
        let accessToken: String
        let tokenType = "Bearer"
        let expiresIn: Int
        let refreshToken: String
        let idToken: String
        let scope = "openid"

        enum CodingKeys: String, CodingKey {
            case scope
            case accessToken = "access_token"
            case tokenType = "token_type"
            case expiresIn = "expires_in"
            case refreshToken = "refresh_token"
            case idToken = "id_token"
        }

        init(_ tokens: OAuthTokens) {
            accessToken = tokens.accessToken
            expiresIn = tokens.expiresIn
            refreshToken = tokens.refreshToken
            idToken = tokens.idToken
        }
    }

    /// RFC 6749 §5.2 error body.
    struct TokenError: Error, Encodable, Sendable {
        let error: String
        let errorDescription: String
        enum CodingKeys: String, CodingKey {
            case error
            case errorDescription = "error_description"
        }
        init(_ error: String, _ description: String) {
            self.error = error
            self.errorDescription = description
        }
    }

    @Sendable func token(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        let headers: HTTPFields = [.cacheControl: "no-store", HTTPField.Name("Pragma")!: "no-cache"]
        do {
            let form = try await request.decodeForm(TokenForm.self, context: context)
            guard let clientID = form.clientID, let key = try await environment.store.apiKey(id: clientID) else {
                return try JSONBody(
                    TokenError("invalid_client", "client_id is missing or unknown"), status: .unauthorized,
                    headers: headers
                ).response(from: request, context: context)
            }
            let tokens: OAuthTokens
            switch form.grantType {
            case "authorization_code": tokens = try await redeem(form, key: key)
            case "refresh_token": tokens = try await refresh(form, key: key)
            default: throw TokenError("unsupported_grant_type", "use authorization_code or refresh_token")
            }
            return try JSONBody(TokenResponse(tokens), headers: headers).response(from: request, context: context)
        } catch let error as TokenError {
            return try JSONBody(error, status: .badRequest, headers: headers).response(from: request, context: context)
        } catch let error as APIError where error.status.code < 500 {
            return try JSONBody(TokenError("invalid_request", error.message), status: .badRequest, headers: headers)
                .response(from: request, context: context)
        }
    }

    private func redeem(_ form: TokenForm, key: APIKey) async throws -> OAuthTokens {
        guard let code = form.code, let verifier = form.codeVerifier, let redirectURI = form.redirectURI else {
            throw TokenError("invalid_request", "code, code_verifier and redirect_uri are required")
        }
        guard let challengeID = code.split(separator: ".").first.flatMap({ Int64($0) }) else {
            throw TokenError("invalid_grant", "unknown authorization code")
        }
        let redeemed: VerificationChallenge
        do {
            redeemed = try await CodeRedemption(environment: environment).redeem(
                challengeID: challengeID, code: code, verifier: verifier, redirectURL: redirectURI, apiKeyID: key.id)
        } catch let failure as CodeRedemption.Failure {
            throw TokenError("invalid_grant", failure.explanation)
        }
        let now = environment.now()
        let identity = try await environment.store.verifiedIdentity(
            apiKeyID: key.id, type: redeemed.identifierType, identifier: redeemed.identifier, now: now)
        return try await OAuthTokenIssuer(environment: environment)
            .issue(
                for: identity, family: CodeRedemption.family(of: redeemed), authTime: redeemed.verifiedAt ?? now,
                nonce: redeemed.nonce)
    }

    private func refresh(_ form: TokenForm, key: APIKey) async throws -> OAuthTokens {
        guard let presented = form.refreshToken else {
            throw TokenError("invalid_request", "refresh_token is required")
        }
        let digest = SecretToken.digest(presented)
        guard let record = try await environment.store.refreshToken(digest: digest), record.apiKeyID == key.id,
            let identity = try await environment.store.verifiedIdentity(id: record.identityID)
        else {
            throw TokenError("invalid_grant", "unknown refresh token")
        }
        let issuer = OAuthTokenIssuer(environment: environment)
        let (secret, replacement) = issuer.newRefreshToken(for: identity, family: record.familyID)
        let rotated: RefreshTokenRecord
        do {
            rotated = try await environment.store.rotateRefreshToken(
                digest: digest, replacement: replacement, now: environment.now())
        } catch let error as StoreError where error.code == .conflict {
            throw TokenError(
                "invalid_grant", "this refresh token was already used; every token of its grant is revoked")
        } catch let error as StoreError where error.code == .notFound {
            throw TokenError("invalid_grant", "the refresh token has expired")
        }
        return try await issuer.tokens(
            for: identity, authTime: rotated.authTime ?? record.createdAt, refreshToken: secret)
    }
}
