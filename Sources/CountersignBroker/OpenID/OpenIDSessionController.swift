import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird
import JWTKit
import Logging

/// What a relying party asks of a sign-in after its tokens: the userinfo
/// endpoint (OpenID Connect Core §5.3) and RP-initiated logout (OpenID
/// Connect RP-Initiated Logout 1.0).
struct OpenIDSessionController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<BrokerRequestContext> {
        RouteCollection(context: BrokerRequestContext.self)
            .get("oauth/userinfo", use: userInfo)
            .post("oauth/userinfo", use: userInfo)
            .get("oauth/end-session") { request, context in
                try await HostedPage.answering(context) { try await endSession(request, context: context) }
            }
            .post("oauth/end-session") { request, context in
                try await HostedPage.answering(context) { try await endSession(request, context: context) }
            }
    }

    /// The claims userinfo gives: those of the access token's grant.
    struct UserInfo: Encodable, Sendable {
        let sub: String
        let preferredUsername: String?
        let name: String?
        let email: String?
        let emailVerified: Bool?
        let phoneNumber: String?
        let phoneNumberVerified: Bool?

        enum CodingKeys: String, CodingKey {
            case sub, name, email
            case preferredUsername = "preferred_username"
            case emailVerified = "email_verified"
            case phoneNumber = "phone_number"
            case phoneNumberVerified = "phone_number_verified"
        }
    }

    /// RFC 6750 §3.1: a Bearer challenge naming the error.
    private static func invalidToken(_ description: String) -> APIError {
        var error = APIError.oauth(.invalidToken, description, status: .unauthorized)
        error.headers[.wwwAuthenticate] = #"Bearer realm="countersign", error="invalid_token""#
        return error
    }

    @Sendable func userInfo(_ request: Request, context: BrokerRequestContext) async throws -> JSONBody<UserInfo> {
        let token = try await AccessTokenCredentials.read(request, context: context)
        let claims: OAuthTokenClaims
        do {
            claims = try await environment.keys.verify(token, as: OAuthTokenClaims.self)
        } catch {
            throw Self.invalidToken("the access token is not valid, or has expired")
        }
        guard claims.tokenType == "access_token", claims.iss == environment.issuer,
            claims.scope?.split(separator: " ").contains("openid") ?? false
                || claims.identifier != nil || claims.sid != nil
        else { throw Self.invalidToken("this token is not an access token for userinfo") }
        if let sid = claims.sid, try await environment.store.openIDSignIn(eventID: sid)?.endedAt != nil {
            throw Self.invalidToken("the sign-in of this token has ended (signed out)")
        }
        return JSONBody(
            UserInfo(
                sub: claims.sub, preferredUsername: claims.preferredUsername, name: claims.name, email: claims.email,
                emailVerified: claims.emailVerified, phoneNumber: claims.phoneNumber,
                phoneNumberVerified: claims.phoneNumberVerified),
            headers: .oauthNoStore)
    }

    /// The claims of an `id_token_hint`: one the broker signed, expired or not
    /// (a person signs out long after signing in).
    struct HintClaims: JWTPayload {
        let iss: String
        let aud: String
        let sub: String
        let sid: String?
        let tokenType: String?

        enum CodingKeys: String, CodingKey {
            case iss, aud, sub, sid
            case tokenType = "token_type"
        }

        func verify(using _: some JWTAlgorithm) async throws {}
    }

    /// Ends the sign-in the `id_token_hint` names (its refresh tokens stop
    /// working, userinfo refuses its access tokens), then sends the browser
    /// to `post_logout_redirect_uri` with `state` (it must be one of the
    /// client's registered redirect URIs) or shows that it is done.
    @Sendable func endSession(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        let form = request.method == .post ? FormQuery(try await request.formBody(context: context)) : request.formQuery
        func refuse(_ message: String) -> Response {
            HostedPage.response(
                HostedPage.failure(message, returnURL: nil, title: "Not signed out"), status: .badRequest)
        }
        var hint: HintClaims?
        if let token = form["id_token_hint"] {
            guard let claims = try? await environment.keys.verify(token, as: HintClaims.self),
                claims.iss == environment.issuer, claims.tokenType == "id_token"
            else { return refuse("The id_token_hint is not an ID token this broker issued.") }
            hint = claims
        }
        if let clientID = form["client_id"], let hint, hint.aud != clientID {
            return refuse("The client_id is not the app the id_token_hint was issued to.")
        }
        let clientID = hint?.aud ?? form["client_id"]
        var key: APIKey?
        if let clientID { key = try await environment.store.apiKey(id: clientID) }
        if let redirect = form["post_logout_redirect_uri"] {
            guard let key,
                RedirectURL.isAllowed(redirect, registered: try await environment.store.redirectURLs(apiKeyID: key.id))
            else {
                return refuse(
                    "The post_logout_redirect_uri is not registered for this app, so this page will not send you there."
                )
            }
        }
        var ended = false
        if let sid = hint?.sid, let signIn = try await environment.store.openIDSignIn(eventID: sid),
            signIn.apiKeyID == hint?.aud
        {
            ended = try await environment.store.endOpenIDSignIn(eventID: sid, now: environment.now())
            if ended {
                context.logger.info("signed out", metadata: ["sid": "\(sid)", "client": "\(signIn.apiKeyID)"])
            }
        }
        if let redirect = form["post_logout_redirect_uri"] {
            let items = [URLQueryItem(name: "state", value: form["state"])].filter { $0.value != nil }
            return HostedPage.redirect(to: RedirectURL.appending(items, to: redirect) ?? redirect)
        }
        let app = key.map { " of \($0.name)" } ?? ""
        let said =
            ended
            ? "You are signed out\(app). You can close this page."
            : "There is no sign-in here to end: the app signs you out itself. You can close this page."
        return HostedPage.response(
            HostedPage.layout(
                title: "Signed out", body: #"<p class="lead">\#(HostedPage.escape(said))</p>"#))
    }
}
