import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird

/// OpenID CIBA Core 1.0, poll and ping modes: a client (an API key with its
/// secret) asks for a user's approval at `/oauth/bc-authorize`; the user's
/// trusted devices see it as any other request; the client polls the token
/// endpoint with the `auth_req_id` until a device decides, or, registered
/// for the ping mode (`device-broker apikey set-ciba-ping`), is notified
/// through the outbox when it did and then calls the token endpoint.
///
/// No number matching: a CIBA client shows its user no number it could
/// have been given (the specification has no place for one). The
/// `binding_message`, which the client shows on its own screen, takes its
/// place as the request's details: the person compares the two.
struct CIBAController {
    let environment: BrokerEnvironment

    static let grantType = "urn:openid:params:grant-type:ciba"

    var endpoints: RouteCollection<OAuthClientContext> {
        RouteCollection(context: OAuthClientContext.self)
            .post("oauth/bc-authorize", use: authorize)
    }

    struct AuthenticationForm: Decodable {
        var scope: String?
        var loginHint: String?
        var idTokenHint: String?
        var loginHintToken: String?
        var bindingMessage: String?
        var requestedExpiry: String?
        var clientNotificationToken: String?
        var userCode: String?
        /// Naming ``ApprovalAuthentication/passkeyACR`` asks for the
        /// owner to be verified by a passkey (other values are wishes the
        /// broker cannot grant more strongly, and are ignored).
        var acrValues: String?

        enum CodingKeys: String, CodingKey {
            case scope
            case acrValues = "acr_values"
            case loginHint = "login_hint"
            case idTokenHint = "id_token_hint"
            case loginHintToken = "login_hint_token"
            case bindingMessage = "binding_message"
            case requestedExpiry = "requested_expiry"
            case clientNotificationToken = "client_notification_token"
            case userCode = "user_code"
        }
    }

    /// CIBA Core §7.3.
    struct AuthenticationResponse: Encodable {
        let authReqID: String
        let expiresIn: Int
        let interval: Int

        enum CodingKeys: String, CodingKey {
            case authReqID = "auth_req_id"
            case expiresIn = "expires_in"
            case interval
        }
    }

    @Sendable func authorize(_ request: Request, context: OAuthClientContext) async throws -> JSONBody<
        AuthenticationResponse
    > {
        let form = try context.form(AuthenticationForm.self)
        guard context.client.authenticated else {
            throw APIError.oauth(
                .invalidClient, "a CIBA client authenticates with its secret (client_secret_basic or _post)")
        }
        let checked = try Self.check(form, window: environment.policy.window)
        let ping = try await notification(for: context.client, token: form.clientNotificationToken)
        let answer = try await open(checked, client: context.client, ping: ping, ip: context.clientAddress)
        return JSONBody(answer, headers: .oauthNoStore)
    }

    /// A request the form asks for, checked without a read.
    struct Checked {
        let user: String
        let scope: String
        let bindingMessage: String?
        let expiry: Int
        let userVerification: Bool
    }

    /// Ping mode for a client registered with a notification endpoint
    /// (its token is then required), poll mode otherwise (no token taken).
    func notification(for client: OAuthClient, token: String?) async throws -> (endpoint: String, token: String)? {
        guard let endpoint = try await environment.store.cibaNotificationEndpoint(apiKeyID: client.key.id) else {
            guard token == nil else {
                throw APIError.oauth(
                    .invalidRequest, "this client is registered for the poll mode: send no client_notification_token")
            }
            return nil
        }
        guard let token else {
            throw APIError.oauth(
                .invalidRequest, "this client is registered for the ping mode: client_notification_token is required")
        }
        guard CIBARequest.isValidNotificationToken(token) else {
            throw APIError.oauth(
                .invalidRequest, "client_notification_token must be 16 to 1024 characters of a bearer token")
        }
        return (endpoint, token)
    }

    static func check(_ form: AuthenticationForm, window: TimeInterval) throws -> Checked {
        let scopes = (form.scope ?? "").split(separator: " ").map(String.init)
        guard scopes.contains("openid") else {
            throw APIError.oauth(.invalidScope, "scope must include openid")
        }
        let hints = [form.loginHint, form.idTokenHint, form.loginHintToken].compactMap { $0 }
        guard hints.count == 1 else {
            throw APIError.oauth(
                .invalidRequest, "send exactly one of login_hint, id_token_hint and login_hint_token")
        }
        guard form.idTokenHint == nil, form.loginHintToken == nil else {
            throw APIError.oauth(
                .invalidRequest,
                "only login_hint (the app's user id) names the user; id_token_hint and "
                    + "login_hint_token are not supported")
        }
        guard form.userCode == nil else {
            throw APIError.oauth(
                .invalidRequest, "user_code is not supported (backchannel_user_code_parameter_supported)")
        }
        guard let user = form.loginHint, ClientUserID.isValid(user) else {
            throw APIError.oauth(.unknownUserID, "login_hint is not a valid user id")
        }
        var bindingMessage: String?
        if let message = form.bindingMessage {
            switch DisplayText.check(message, as: .bindingMessage) {
            case .success(let text): bindingMessage = text
            case .failure(let refusal):
                throw APIError.oauth(
                    .invalidBindingMessage, refusal.message(field: DisplayText.Field.bindingMessage.name))
            }
        }
        var expiry = Int(window)
        if let requested = form.requestedExpiry {
            guard let seconds = Int(requested), CIBAPollRule.expiryRange.contains(seconds) else {
                throw APIError.oauth(
                    .invalidRequest,
                    "requested_expiry must be whole seconds from \(CIBAPollRule.expiryRange.lowerBound) to "
                        + "\(CIBAPollRule.expiryRange.upperBound)")
            }
            expiry = seconds
        }
        return Checked(
            user: user, scope: scopes.joined(separator: " "), bindingMessage: bindingMessage, expiry: expiry,
            userVerification: ApprovalAuthentication.requiresUserVerification(acrValues: form.acrValues))
    }

    private func open(
        _ checked: Checked, client: OAuthClient, ping: (endpoint: String, token: String)?, ip: String
    ) async throws -> AuthenticationResponse {
        let interval = CIBAPollRule.initialInterval
        let opened: PendingEvents.Opened
        do {
            opened = try await PendingEvents(environment: environment).open(
                PendingEvents.Draft(
                    key: client.key, user: checked.user, name: EventName.login, ip: ip,
                    details: checked.bindingMessage, numberMatching: false,
                    userVerification: checked.userVerification ? .required : nil,
                    window: TimeInterval(checked.expiry), channel: .ciba),
                by: .backend, holdsSecret: true
            ) { event, secret in
                .ciba(
                    CIBARequest(
                        eventID: event.id, apiKeyID: client.key.id, scope: checked.scope, interval: interval,
                        nextPollAt: event.createdAt, notificationToken: ping?.token,
                        notificationEndpoint: ping?.endpoint,
                        // Kept only to be sent back in the ping.
                        authRequestID: ping.map { _ in CIBARequest.authRequestID(eventID: event.id, secret: secret) },
                        createdAt: event.createdAt))
            }
        } catch let error as APIError where error == .noTrustedDevice {
            throw APIError.oauth(.unknownUserID, error.message)
        } catch let error as APIError where error == .passkeysUnavailable {
            throw APIError.oauth(.invalidRequest, "user verification is required: \(error.message)")
        } catch let error as StoreError {
            guard case .limitReached(let retryAfter) = error.code else { throw error }
            throw APIError.oauth(
                .accessDenied, "too many requests are waiting for this user", status: .tooManyRequests,
                retryAfter: retryAfter)
        }
        return AuthenticationResponse(
            authReqID: CIBARequest.authRequestID(eventID: opened.event.id, secret: opened.requesterToken),
            expiresIn: checked.expiry, interval: interval)
    }

    /// The token endpoint's answer to `grant_type=urn:openid:params:grant-type:ciba` (CIBA Core §10-11).
    func redeem(_ authReqID: String?, client: OAuthClient) async throws -> OAuthTokens {
        guard client.authenticated else {
            throw APIError.oauth(.invalidClient, "a CIBA client authenticates with its secret")
        }
        guard let authReqID else { throw APIError.oauth(.invalidRequest, "auth_req_id is required") }
        // Unknown, malformed, another client's or a wrong secret: one answer.
        let unknown = APIError.oauth(.invalidGrant, "unknown auth_req_id")
        guard let (eventID, secret) = CIBARequest.parse(authRequestID: authReqID),
            let request = try await environment.store.cibaRequest(eventID: eventID),
            request.apiKeyID == client.key.id,
            let event = try await environment.store.event(id: eventID),
            let digest = event.requesterTokenDigest,
            SecretToken.constantTimeEquals(SecretToken.digest(secret), digest)
        else { throw unknown }
        let poll = try await environment.store.pollCIBARequest(eventID: eventID, now: environment.now())
        switch poll.outcome {
        case .pending:
            throw APIError.oauth(.authorizationPending, "the user has not answered yet")
        case .slowDown(let next):
            throw APIError.oauth(.slowDown, "poll at most every \(next.interval) s")
        case .denied:
            throw APIError.oauth(.accessDenied, "the user rejected the request")
        case .expired:
            throw APIError.oauth(.expiredToken, "the request expired before the user answered")
        case .redeemed:
            throw APIError.oauth(.invalidGrant, "this auth_req_id was redeemed already")
        case .issue:
            // The event as the poll decided from: the decision may have
            // landed after the read above.
            return try await OAuthTokenIssuer(environment: environment).issue(
                approved: poll.event, authReqID: authReqID)
        }
    }
}
