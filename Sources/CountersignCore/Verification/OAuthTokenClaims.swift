import Foundation
public import JWTKit

/// Claims of the access and ID tokens: ES256 JWTs any OAuth or OIDC
/// library verifies with the JWKS.
public struct OAuthTokenClaims: JWTPayload, Equatable {
    public var iss: String
    public var sub: String
    public var aud: String
    public var iat: Int
    public var exp: Int
    public var jti: String
    /// `access_token` or `id_token`.
    public var tokenType: String
    public var clientID: String?
    public var scope: String?
    public var authTime: Int?
    /// The verified email address or phone number (nil for a CIBA grant,
    /// whose subject is the app's user id).
    public var identifier: String?
    public var identifierType: IdentifierType?
    public var email: String?
    public var emailVerified: Bool?
    public var phoneNumber: String?
    public var phoneNumberVerified: Bool?
    public var authMethod: String
    /// The OpenID Connect nonce the app sent to /oauth/authorize (ID token only).
    public var nonce: String?
    /// How the user authenticated: one of ``ApprovalAuthentication/supportedACRs``.
    public var acr: String?
    /// The RFC 8176 methods of `acr` (``ApprovalAuthentication/amr``).
    public var amr: [String]?
    /// For a CIBA grant, the `auth_req_id` it answers (CIBA Core §10.3.1).
    public var authReqID: String?
    /// For a sign-in by approval, its id (``OpenIDSignIn/eventID``), which
    /// logout ends.
    public var sid: String?
    /// For a sign-in with the `profile` scope, the user name typed.
    public var preferredUsername: String?
    public var name: String?

    public init(
        iss: String, sub: String, aud: String, iat: Int, exp: Int, jti: String, tokenType: String, clientID: String?,
        scope: String?, authTime: Int?, identifier: String?, identifierType: IdentifierType?, email: String? = nil,
        emailVerified: Bool? = nil, phoneNumber: String? = nil, phoneNumberVerified: Bool? = nil, authMethod: String,
        nonce: String? = nil, acr: String? = nil, authReqID: String? = nil
    ) {
        self.iss = iss
        self.sub = sub
        self.aud = aud
        self.iat = iat
        self.exp = exp
        self.jti = jti
        self.tokenType = tokenType
        self.clientID = clientID
        self.scope = scope
        self.authTime = authTime
        self.identifier = identifier
        self.identifierType = identifierType
        self.email = email
        self.emailVerified = emailVerified
        self.phoneNumber = phoneNumber
        self.phoneNumberVerified = phoneNumberVerified
        self.authMethod = authMethod
        self.nonce = nonce
        self.acr = acr
        self.amr = acr.map { ApprovalAuthentication(acr: $0).amr }
        self.authReqID = authReqID
    }

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, iat, exp, jti, scope, identifier, email, nonce, acr, amr, sid, name
        case preferredUsername = "preferred_username"
        case authReqID = "urn:openid:params:jwt:claim:auth_req_id"
        case tokenType = "token_type"
        case clientID = "client_id"
        case authTime = "auth_time"
        case identifierType = "identifier_type"
        case emailVerified = "email_verified"
        case phoneNumber = "phone_number"
        case phoneNumberVerified = "phone_number_verified"
        case authMethod = "auth_method"
    }

    public func verify(using _: some JWTAlgorithm) async throws {
        try ExpirationClaim(value: Date(timeIntervalSince1970: TimeInterval(exp))).verifyNotExpired()
    }
}
