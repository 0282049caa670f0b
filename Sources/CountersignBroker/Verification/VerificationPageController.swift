import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// The hosted page `/app` that verifies an email address or phone number
/// with a one-time code and sends the browser back to the app with an
/// authorization code (OAuth 2.0 code flow with PKCE, S256 only).
///
/// Until the redirect URL is known to be registered for the API key,
/// errors are shown on the page and never redirected; after that, a
/// refusal goes back to the app as an OAuth error with the state.
struct VerificationPageController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<BrokerRequestContext> {
        RouteCollection(context: BrokerRequestContext.self)
            .get("app", use: start)
            .get("oauth/authorize") { request, context in
                try await HostedPage.answering(context) { try await authorize(request, context: context) }
            }
            .post("oauth/authorize") { request, context in
                try await HostedPage.answering(context) { try await authorize(request, context: context) }
            }
            .post("app/code", use: sendCode)
            .post("app/verify", use: verify)
            .post("app/resend", use: resend)
            .post("app/cancel", use: cancel)
    }

    @Sendable func start(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        let query = request.formQuery
        let parameters = HostedPage.Request(
            apiKey: query["api_key"] ?? "", redirectURL: query["redirect_url"] ?? "", type: query["type"] ?? "",
            codeChallenge: query["code_challenge"] ?? "", state: query["state"])
        let method = query["code_challenge_method"]
        switch try await validate(parameters, method: method) {
        case .failed(let response): return response
        case .valid(let key, let type):
            return HostedPage.response(
                HostedPage.identifierForm(
                    parameters, app: key.name, isEmail: type == .email, value: query["login_hint"]))
        }
    }

    /// The standard OAuth 2.0 entry to the same page (RFC 6749 §4.1.1, RFC 7636),
    /// or to sign-in by approval; by GET, or by POST with the parameters as
    /// a form (OpenID Connect Core §3.1.2.1).
    @Sendable func authorize(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        let form = request.method == .post ? FormQuery(try await request.formBody(context: context)) : request.formQuery
        var registered: OpenIDClientRegistration?
        if let clientID = form["client_id"] {
            registered = try await environment.store.openIDClient(apiKeyID: clientID)
        }
        if OpenIDAuthorization.signsIn(registered: registered) {
            return try await SignInPageController(environment: environment).authorize(form)
        }
        func query(_ name: String) -> String? { form[name] }
        let parameters = HostedPage.Request(
            apiKey: query("client_id") ?? "", redirectURL: query("redirect_uri") ?? "",
            type: query("identifier_type") ?? IdentifierType.email.rawValue,
            codeChallenge: query("code_challenge") ?? "",
            state: query("state"), nonce: query("nonce"))
        switch try await validate(
            parameters, method: query("code_challenge_method") ?? "", responseType: query("response_type"))
        {
        case .failed(let response): return response
        case .valid(let key, let type):
            return HostedPage.response(
                HostedPage.identifierForm(
                    parameters, app: key.name, isEmail: type == .email, value: query("login_hint")))
        }
    }

    struct SendForm: Decodable {
        var request: HostedPage.Request
        var identifier: String
        init(from decoder: any Decoder) throws {
            request = try HostedPage.Request(from: decoder)
            identifier = try decoder.container(keyedBy: Key.self).decode(String.self, forKey: .identifier)
        }
        enum Key: String, CodingKey { case identifier }
    }

    @Sendable func sendCode(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        let form = try await request.decodeForm(SendForm.self, context: context)
        let key: APIKey
        let type: IdentifierType
        switch try await validate(form.request, method: nil) {
        case .failed(let response): return response
        case .valid(let validKey, let validType): (key, type) = (validKey, validType)
        }
        guard let identifier = type.normalize(form.identifier) else {
            let message =
                type == .email
                ? "That is not an email address." : "Enter the number with its country code, like +1 555 010 0000."
            return HostedPage.response(
                HostedPage.identifierForm(
                    form.request, app: key.name, isEmail: type == .email, value: form.identifier, error: message),
                status: .badRequest)
        }
        let now = environment.now()
        let id = VerificationChallenge.newID()
        let code = OneTimeCode.generate()
        let policy = environment.verification
        let challenge = VerificationChallenge(
            id: id, apiKeyID: key.id, identifierType: type, identifier: identifier,
            codeDigest: OneTimeCode.digest(code, challengeID: String(id)), codeExpiresAt: now + policy.codeLifetime,
            codeChallenge: form.request.codeChallenge, redirectURL: form.request.redirectURL, state: form.request.state,
            nonce: form.request.nonce,
            createdAt: now, userAgent: String((request.headers[.userAgent] ?? "unknown").prefix(512)),
            ip: context.clientAddress)
        do {
            try await environment.store.insertChallenge(
                challenge,
                limits: ChallengeLimits(
                    perIdentifier: policy.sendsPerIdentifier, perAddress: policy.sendsPerAddress,
                    window: policy.sendWindow),
                now: now)
        } catch let error as StoreError {
            guard case .limitReached(let retryAfter) = error.code else { throw error }
            return HostedPage.response(
                HostedPage.identifierForm(
                    form.request, app: key.name, isEmail: type == .email, value: identifier,
                    error: "Too many codes were sent. Try again in \(HostedPage.minutes(retryAfter))."),
                status: .tooManyRequests)
        }
        guard await deliver(code, to: identifier, type: type, app: key.name, context: context) else {
            return HostedPage.response(
                HostedPage.identifierForm(
                    form.request, app: key.name, isEmail: type == .email, value: identifier,
                    error: "We could not send the code just now. Please try again in a moment."),
                status: .badGateway)
        }
        return HostedPage.response(
            HostedPage.codeForm(
                challengeID: id, identifier: identifier, request: form.request, lifetime: policy.codeLifetime))
    }

    struct CodeForm: Decodable {
        var challengeID: Int64
        var code: String
        enum CodingKeys: String, CodingKey {
            case code
            case challengeID = "challenge_id"
        }
    }

    @Sendable func verify(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        let form = try await request.decodeForm(CodeForm.self, context: context)
        guard let challenge = try await environment.store.challenge(id: form.challengeID) else {
            return HostedPage.response(
                HostedPage.failure("This verification does not exist. Start again from the app.", returnURL: nil),
                status: .notFound)
        }
        let code = form.code.filter { !$0.isWhitespace }
        guard code.count == 6, code.allSatisfy(\.isNumber) else {
            return page(challenge, error: "Enter the 6-digit code from the message.", status: .badRequest)
        }
        let now = environment.now()
        // The secret part is 256 random bits.
        let authorizationCode = AuthorizationCode.verificationCode(
            challengeID: challenge.id, secret: SecretToken.generate(bytes: 32))
        let policy = environment.verification
        let after: VerificationChallenge
        do {
            after = try await environment.store.submitCode(
                challengeID: challenge.id, codeDigest: OneTimeCode.digest(code, challengeID: String(challenge.id)),
                authorizationCodeDigest: SecretToken.digest(authorizationCode),
                authorizationCodeExpiresAt: now + policy.authorizationCodeLifetime, maxAttempts: policy.maxAttempts,
                now: now)
        } catch let error as StoreError where error.code == .conflict {
            return closed(challenge, now: now)
        }
        switch after.standing(maxAttempts: policy.maxAttempts, now: now) {
        case .verified:
            let items = [
                URLQueryItem(name: "code", value: authorizationCode), URLQueryItem(name: "state", value: after.state),
                URLQueryItem(name: "challenge_id", value: String(after.id)),
                URLQueryItem(name: "iss", value: environment.issuer),
            ].filter { $0.value != nil }
            return HostedPage.redirect(to: RedirectURL.appending(items, to: after.redirectURL) ?? after.redirectURL)
        case .open(let left):
            return page(
                after, error: "That code is not right. \(APIError.triesLeft(left)).",
                status: .badRequest)
        case .closedAfterWrongCodes, .codeExpired:
            return closed(after, now: now)
        }
    }

    struct ChallengeForm: Decodable {
        var challengeID: Int64
        enum CodingKeys: String, CodingKey { case challengeID = "challenge_id" }
    }

    @Sendable func resend(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        let form = try await request.decodeForm(ChallengeForm.self, context: context)
        guard let challenge = try await environment.store.challenge(id: form.challengeID),
            let key = try await environment.store.apiKey(id: challenge.apiKeyID)
        else {
            return HostedPage.response(
                HostedPage.failure("This verification does not exist. Start again from the app.", returnURL: nil),
                status: .notFound)
        }
        let now = environment.now()
        let code = OneTimeCode.generate()
        let policy = environment.verification
        do {
            _ = try await environment.store.resendCode(
                challengeID: challenge.id, codeDigest: OneTimeCode.digest(code, challengeID: String(challenge.id)),
                codeExpiresAt: now + policy.codeLifetime, maxSends: policy.maxSends, maxAttempts: policy.maxAttempts,
                now: now)
        } catch let error as StoreError {
            switch error.code {
            case .limitReached:
                return page(
                    challenge, error: "The code was sent too many times. Use the last one you got.",
                    status: .tooManyRequests)
            case .conflict:
                return closed(challenge, now: now)
            default:
                throw error
            }
        }
        guard
            await deliver(
                code, to: challenge.identifier, type: challenge.identifierType, app: key.name, context: context)
        else {
            return page(challenge, error: "We could not send the code just now. Please try again.", status: .badGateway)
        }
        return page(challenge, notice: "A new code is on its way.")
    }

    /// What the cancel button sends: where to go back to, and the state.
    struct CancelForm: Decodable {
        let apiKey: String
        let redirectURL: String
        let state: String?
        enum CodingKeys: String, CodingKey {
            case state
            case apiKey = "api_key"
            case redirectURL = "redirect_url"
        }
    }

    @Sendable func cancel(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        let form = try await request.decodeForm(CancelForm.self, context: context)
        guard try await redirectIsRegistered(form.redirectURL, apiKeyID: form.apiKey) else {
            return HostedPage.response(
                HostedPage.failure("This app's redirect URL is not registered.", returnURL: nil), status: .badRequest)
        }
        return HostedPage.redirect(
            to: errorRedirect(
                form.redirectURL, error: .accessDenied, description: "the user cancelled", state: form.state))
    }
}
