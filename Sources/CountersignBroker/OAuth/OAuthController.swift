import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird

/// The standard OAuth 2.0 / OpenID Connect face of the broker: discovery,
/// and the token endpoint for the verification flow's public clients (PKCE,
/// no secret) and for CIBA clients (their secret).
struct OAuthController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<BrokerRequestContext> {
        RouteCollection(context: BrokerRequestContext.self)
            .get(".well-known/openid-configuration", use: discovery)
    }

    /// Routes an OAuth client calls.
    var clientEndpoints: RouteCollection<OAuthClientContext> {
        RouteCollection(context: OAuthClientContext.self)
            .post("oauth/token", use: token)
    }

    struct Discovery: Encodable, Sendable {
        let issuer: String
        let authorizationEndpoint: String
        let tokenEndpoint: String
        let jwksURI: String
        let userinfoEndpoint: String
        let endSessionEndpoint: String
        let backchannelAuthenticationEndpoint: String
        let backchannelTokenDeliveryModesSupported = ["poll", "ping"]
        let backchannelUserCodeParameterSupported = false
        let acrValuesSupported = ApprovalAuthentication.supportedACRs
        let responseTypesSupported = ["code"]
        let responseModesSupported = ["query"]
        let promptValuesSupported = OpenIDAuthorization.supportedPrompts
        let authorizationResponseIssParameterSupported = true
        let requestParameterSupported = false
        let requestURIParameterSupported = false
        let claimsParameterSupported = false
        let grantTypesSupported = ["authorization_code", "refresh_token", CIBAController.grantType]
        let codeChallengeMethodsSupported = ["S256"]
        // `none` last: only an app registered as public (and the email
        // verification flow's clients) may redeem a code without its secret.
        let tokenEndpointAuthMethodsSupported = ["client_secret_basic", "client_secret_post", "none"]
        let subjectTypesSupported = ["public"]
        let idTokenSigningAlgValuesSupported = ["ES256"]
        let scopesSupported = ["openid", "profile", "email", "phone"]
        let claimsSupported = [
            "iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "acr", "amr", "sid", "preferred_username", "name",
            "email", "email_verified", "phone_number", "phone_number_verified",
            "urn:openid:params:jwt:claim:auth_req_id",
        ]

        enum CodingKeys: String, CodingKey {
            case issuer
            case authorizationEndpoint = "authorization_endpoint"
            case tokenEndpoint = "token_endpoint"
            case jwksURI = "jwks_uri"
            case userinfoEndpoint = "userinfo_endpoint"
            case endSessionEndpoint = "end_session_endpoint"
            case responseModesSupported = "response_modes_supported"
            case promptValuesSupported = "prompt_values_supported"
            case authorizationResponseIssParameterSupported = "authorization_response_iss_parameter_supported"
            case requestParameterSupported = "request_parameter_supported"
            case requestURIParameterSupported = "request_uri_parameter_supported"
            case claimsParameterSupported = "claims_parameter_supported"
            case backchannelAuthenticationEndpoint = "backchannel_authentication_endpoint"
            case backchannelTokenDeliveryModesSupported = "backchannel_token_delivery_modes_supported"
            case backchannelUserCodeParameterSupported = "backchannel_user_code_parameter_supported"
            case acrValuesSupported = "acr_values_supported"
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
                tokenEndpoint: issuer + "/oauth/token", jwksURI: issuer + "/.well-known/jwks.json",
                userinfoEndpoint: issuer + "/oauth/userinfo", endSessionEndpoint: issuer + "/oauth/end-session",
                backchannelAuthenticationEndpoint: issuer + "/oauth/bc-authorize"),
            headers: [.cacheControl: "public, max-age=300"])
    }

    struct TokenForm: Decodable {
        var grantType: String?
        var code: String?
        var redirectURI: String?
        var codeVerifier: String?
        var refreshToken: String?
        var authReqID: String?

        enum CodingKeys: String, CodingKey {
            case code
            case grantType = "grant_type"
            case redirectURI = "redirect_uri"
            case codeVerifier = "code_verifier"
            case refreshToken = "refresh_token"
            case authReqID = "auth_req_id"
        }
    }

    /// RFC 6749 §5.1 success body.
    struct TokenResponse: Encodable, Sendable {
        let accessToken: String
        let tokenType = "Bearer"
        let expiresIn: Int
        let refreshToken: String
        let idToken: String
        let scope: String

        enum CodingKeys: String, CodingKey {
            case scope
            case accessToken = "access_token"
            case tokenType = "token_type"
            case expiresIn = "expires_in"
            case refreshToken = "refresh_token"
            case idToken = "id_token"
        }

        init(_ tokens: OAuthTokens, scope: String = "openid") {
            self.scope = scope
            accessToken = tokens.accessToken
            expiresIn = tokens.expiresIn
            refreshToken = tokens.refreshToken
            idToken = tokens.idToken
        }
    }

    @Sendable func token(_ request: Request, context: OAuthClientContext) async throws -> JSONBody<TokenResponse> {
        let form = try context.form(TokenForm.self)
        let tokens: OAuthTokens
        var scope = "openid"
        switch form.grantType {
        case "authorization_code": (tokens, scope) = try await redeem(form, client: context.client)
        case "refresh_token":
            (tokens, scope) = try await RefreshTokenGrant(environment: environment).refresh(
                form.refreshToken, client: context.client)
        case CIBAController.grantType:
            tokens = try await CIBAController(environment: environment).redeem(form.authReqID, client: context.client)
        default:
            throw APIError.oauth(
                .unsupportedGrantType, "use authorization_code, refresh_token or \(CIBAController.grantType)")
        }
        return JSONBody(TokenResponse(tokens, scope: scope), headers: .oauthNoStore)
    }

    private func redeem(_ form: TokenForm, client: OAuthClient) async throws -> (OAuthTokens, scope: String) {
        guard let code = form.code, let verifier = form.codeVerifier, let redirectURI = form.redirectURI else {
            throw APIError.oauth(.invalidRequest, "code, code_verifier and redirect_uri are required")
        }
        switch AuthorizationCode(code) {
        case .signIn:
            return try await OpenIDSignInGrant(environment: environment).redeem(
                code: code, verifier: verifier, redirectURI: redirectURI, client: client)
        case .verification(let challengeID):
            return try await VerificationCodeGrant(environment: environment).redeem(
                code: code, challengeID: challengeID, verifier: verifier, redirectURI: redirectURI, client: client)
        case nil:
            throw APIError.oauth(.invalidGrant, "unknown authorization code")
        }
    }
}
