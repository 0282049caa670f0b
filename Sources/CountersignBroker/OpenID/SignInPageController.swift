import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Sign-in to an OpenID Connect app by approval: `/oauth/authorize` with
/// `scope=openid` opens this page, which asks for the user name, opens a
/// pending LOGIN of the app (the client) as a requester at the browser's
/// address, shows the number to choose on the trusted device, waits, and
/// sends the browser back to the app with a code, or with an OAuth error.
///
/// Until the client and its redirect URI are known to be registered,
/// errors are shown on the page and never redirected (RFC 6749 §4.1.2.1).
/// The waiting login is held in an HttpOnly, SameSite=Strict cookie: only
/// the browser that started it collects its code.
struct SignInPageController {
    let environment: BrokerEnvironment

    var cookies: BrowserCookies { BrowserCookies(issuer: environment.issuer) }

    var endpoints: RouteCollection<BrokerRequestContext> {
        RouteCollection(context: BrokerRequestContext.self)
            .post("oauth/sign-in") { request, context in
                try await HostedPage.answering(context) { try await start(request, context: context) }
            }
            .get("oauth/sign-in") { request, context in
                try await HostedPage.answering(context) { try await show(request, context: context) }
            }
            .get("oauth/sign-in/status", use: status)
            .post("oauth/sign-in/code") { request, context in
                try await HostedPage.answering(context) { try await finishWithCode(request, context: context) }
            }
            .post("oauth/sign-in/cancel") { request, context in
                try await HostedPage.answering(context) { try await cancel(request, context: context) }
            }
            .get("oauth/sign-in.js") { _, _ in
                Response(
                    status: .ok,
                    headers: [
                        .contentType: "text/javascript; charset=utf-8", .cacheControl: "public, max-age=300",
                        .xContentTypeOptions: "nosniff",
                    ],
                    body: .init(byteBuffer: ByteBuffer(string: SignInPage.script)))
            }
    }

    /// `/oauth/authorize` of a sign-in, its parameters `query`: the user
    /// name form.
    func authorize(_ query: FormQuery) async throws -> Response {
        switch try await check({ query[$0] }) {
        case .failed(let response): return response
        case .valid(let key, let authorization):
            let carried = SignInPage.carried.compactMap { name in query[name].map { (name, $0) } }
            return HostedPage.response(
                SignInPage.userNameForm(app: key.name, parameters: carried, userName: authorization.loginHint))
        }
    }

    enum Checked {
        case valid(APIKey, OpenIDAuthorization)
        case failed(Response)
    }

    /// The client and redirect URI first (a page if either is wrong), then
    /// the rest (an OAuth error back at the redirect URI).
    func check(_ parameter: (String) -> String?) async throws -> Checked {
        guard let clientID = parameter("client_id"), let key = try await environment.store.apiKey(id: clientID),
            key.revokedAt == nil
        else {
            return .failed(
                HostedPage.response(
                    HostedPage.failure(
                        "Unknown app: the client_id is not registered here.", returnURL: nil, title: "Not signed in"),
                    status: .badRequest))
        }
        let redirectURI = parameter("redirect_uri") ?? ""
        guard RedirectURL.isAllowed(redirectURI, registered: try await environment.store.redirectURLs(apiKeyID: key.id))
        else {
            return .failed(
                HostedPage.response(
                    HostedPage.failure(
                        "The redirect_uri is not registered for this app, so this page will not send you there.",
                        returnURL: nil, title: "Not signed in"),
                    status: .badRequest))
        }
        guard let allowed = try await environment.store.openIDClient(apiKeyID: key.id)?.scopes else {
            return .failed(
                HostedPage.response(
                    HostedPage.failure(
                        "This app is not registered to sign in by approval (device-broker apikey set-openid-scopes).",
                        returnURL: nil, title: "Not signed in"),
                    status: .badRequest))
        }
        switch OpenIDAuthorization.check(parameter, allowed: allowed) {
        case .failure(let refusal):
            return .failed(
                HostedPage.redirect(
                    to: errorRedirect(
                        redirectURI, error: ErrorCode(refusal.error), description: refusal.description,
                        state: parameter("state"))))
        case .success(let authorization):
            return .valid(key, authorization)
        }
    }

    /// The user name was sent: the login is opened, and the browser goes
    /// on to the waiting page. The answer is the same whether or not the
    /// name has devices.
    @Sendable func start(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        try request.requireSameOrigin(environment.origins, "the sign-in form is sent from its own page only")
        let form = FormQuery(try await request.formBody(context: context))
        let (key, authorization): (APIKey, OpenIDAuthorization)
        switch try await check({ form[$0] }) {
        case .failed(let response): return response
        case .valid(let validKey, let valid): (key, authorization) = (validKey, valid)
        }
        let carried = SignInPage.carried.compactMap { name in form[name].map { (name, $0) } }
        let user = (form["user"] ?? "").trimmingCharacters(in: .whitespaces)
        guard ClientUserID.isValid(user) else {
            return HostedPage.response(
                SignInPage.userNameForm(
                    app: key.name, parameters: carried, userName: nil,
                    error: "Enter your user name: 1 to 256 characters, with no slash and no hidden characters."),
                status: .badRequest)
        }
        let browser = BrowserSummary.of(userAgent: request.headers[.userAgent] ?? "")
        let now = environment.now()
        let opened: PendingEvents.Opened
        do {
            opened = try await PendingEvents(environment: environment).open(
                PendingEvents.Draft(
                    key: key, user: user, name: EventName.login, ip: context.clientAddress,
                    details: "Sign in to \(key.name) in a web browser", requesterName: browser,
                    userVerification: authorization.requiresUserVerification ? .required : nil,
                    limits: environment.policy.pendingLimits.forSignInPage, channel: .openid),
                by: .requester(address: context.clientAddress), holdsSecret: false
            ) { event, _ in
                .signIn(
                    OpenIDSignIn(
                        eventID: event.id, apiKeyID: key.id, redirectURI: authorization.redirectURI,
                        codeChallenge: authorization.codeChallenge, state: authorization.state,
                        nonce: authorization.nonce, scope: authorization.scope, createdAt: now))
            }
        } catch let error as StoreError {
            let (message, refusal, description): (String, ErrorCode, String)
            switch error.code {
            case .limitReached(let retryAfter):
                message =
                    "Too many sign-in requests from here or for this user. Try again in \(HostedPage.minutes(retryAfter))."
                (refusal, description) = (.temporarilyUnavailable, "too many sign-in requests")
            case .userProtected(let retryAfter):
                message =
                    "Sign-in is paused for this user after a request was reported as not theirs. Try again in \(HostedPage.minutes(retryAfter))."
                (refusal, description) = (.accessDenied, "sign-in is paused for this user after a fraud report")
            default: throw error
            }
            let back = errorRedirect(
                authorization.redirectURI, error: refusal, description: description, state: authorization.state)
            return HostedPage.response(
                SignInPage.userNameForm(
                    app: key.name, parameters: carried, userName: user, error: message, back: back),
                status: .tooManyRequests)
        } catch let error as APIError where error == .passkeysUnavailable {
            return HostedPage.redirect(
                to: errorRedirect(
                    authorization.redirectURI, error: .serverError,
                    description: "user verification is required, and this broker cannot verify users: \(error.message)",
                    state: authorization.state))
        }
        let maxAge = Int(opened.event.expiresAt.timeIntervalSince(now).rounded(.up)) + 300
        return HostedPage.redirect(
            to: Self.page(opened.event.id),
            headers: [
                .setCookie: cookies.setting(
                    .openIDSignIn(eventID: opened.event.id), opened.requesterToken, maxAge: maxAge)
            ])
    }

    /// The waiting page while the login is pending; once it is decided, the
    /// way back to the app: with the code, or with the OAuth error.
    @Sendable func show(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        guard let (event, signIn, key) = try await attempt(request, id: request.formQuery["id"]) else {
            return Self.noAttempt
        }
        let now = environment.now()
        switch OpenIDSignInOutcome.of(event, now: now) {
        case .waiting:
            return HostedPage.response(
                SignInPage.waiting(app: key.name, event: event, now: now, codes: environment.vault != nil),
                policy: SignInPage.waitingPolicy)
        case .approved:
            let secret = SecretToken.generate(bytes: 32)
            let code = OpenIDSignIn.code(eventID: event.id, secret: secret)
            do {
                try await environment.store.issueOpenIDCode(
                    eventID: event.id, digest: SecretToken.digest(code), expiresAt: now + OpenIDSignIn.codeLifetime)
            } catch let error as StoreError where error.code == .conflict {
                return HostedPage.response(
                    HostedPage.failure(
                        "This sign-in was finished already. Start again from the app.", returnURL: nil,
                        title: "Not signed in"),
                    status: .gone, headers: [.setCookie: clearCookie(event.id)])
            }
            let items = [
                URLQueryItem(name: "code", value: code), URLQueryItem(name: "state", value: signIn.state),
                URLQueryItem(name: "iss", value: environment.issuer),
            ].filter { $0.value != nil }
            return HostedPage.redirect(
                to: RedirectURL.appending(items, to: signIn.redirectURI) ?? signIn.redirectURI,
                headers: [.setCookie: clearCookie(event.id)])
        case .ended(let message, let description):
            let back = errorRedirect(
                signIn.redirectURI, error: .accessDenied, description: description, state: signIn.state)
            return HostedPage.response(
                SignInPage.ended(message, app: key.name, back: back), headers: [.setCookie: clearCookie(event.id)])
        }
    }

    struct StatusDocument: Encodable, Sendable {
        let status: String
    }

    /// The waiting login's status, held up to `?wait=N` seconds until it
    /// is decided: what the page's script polls.
    @Sendable func status(_ request: Request, context: BrokerRequestContext) async throws -> JSONBody<StatusDocument> {
        guard let (eventID, secret) = attemptCookie(request, id: request.formQuery["id"]) else {
            throw APIError.notSignedIn("no sign-in is waiting in this browser")
        }
        let wait = try request.waitSeconds(max: environment.policy.maxWait)
        let settled = try await LongPoll(environment: environment).event(
            eventID, wait: wait, holder: "requester/" + eventID
        ) {
            do {
                return try await EventController.event(eventID, heldBy: .requester(secret: secret), in: environment)
            } catch let error as APIError where error.status == .notFound {
                throw APIError.notSignedIn("no sign-in is waiting in this browser")
            }
        }
        return JSONBody(StatusDocument(status: settled.status(at: environment.now()).rawValue))
    }

    /// No device at hand: a TOTP code from one approves the login.
    @Sendable func finishWithCode(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        try request.requireSameOrigin(environment.origins, "the code is sent from the sign-in page only")
        let form = FormQuery(try await request.formBody(context: context))
        guard let (event, _, key) = try await attempt(request, id: form["id"]) else { return Self.noAttempt }
        let code = (form["code"] ?? "").filter { !$0.isWhitespace }
        func again(_ message: String, _ status: HTTPResponse.Status) -> Response {
            HostedPage.response(
                SignInPage.waiting(
                    app: key.name, event: event, now: environment.now(), codes: environment.vault != nil,
                    error: message),
                status: status, policy: SignInPage.waitingPolicy)
        }
        guard event.status(at: environment.now()) == .pending else {
            return HostedPage.redirect(to: Self.page(event.id))
        }
        if CodeFinishRule.refusal(for: event) == .userVerificationRequired {
            return again("This sign-in must be approved on a device with its screen lock, not with a code.", .forbidden)
        }
        do {
            _ = try await CodeCheck(environment: environment, logger: context.logger).verify(
                code, issuer: event.issuer, user: event.clientUserID, event: event)
        } catch let error as APIError where error.status.code < 500 {
            return again(HostedPage.sentence(error.message), error.status)
        }
        return HostedPage.redirect(to: Self.page(event.id))
    }

    /// The person gives up: the login is withdrawn (the device stops
    /// asking), and the app hears `access_denied`.
    @Sendable func cancel(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        try request.requireSameOrigin(environment.origins, "the sign-in is cancelled from its own page only")
        let form = FormQuery(try await request.formBody(context: context))
        guard let (event, signIn, _) = try await attempt(request, id: form["id"]) else { return Self.noAttempt }
        let now = environment.now()
        if Withdrawal.evaluate(event, now: now) == .withdraw {
            do {
                _ = try await EventTransitions(environment: environment).withdraw(event, now: now)
            } catch let error as APIError where error.status == .conflict {
                // Decided meanwhile: the page tells how, and goes on.
                return HostedPage.redirect(to: Self.page(event.id))
            }
        }
        return HostedPage.redirect(
            to: errorRedirect(
                signIn.redirectURI, error: .accessDenied, description: "the user cancelled the sign-in",
                state: signIn.state),
            headers: [.setCookie: clearCookie(event.id)])
    }

    // MARK: - The attempt

    /// The waiting page of the sign-in that opened `eventID`.
    static func page(_ eventID: String) -> String { "/oauth/sign-in?id=" + eventID }

    /// The sign-in a request names (`id`) and the requester token its
    /// cookie holds.
    private func attemptCookie(_ request: Request, id: String?) -> (String, String)? {
        guard let id, let token = cookies.value(.openIDSignIn(eventID: id), in: request.headers) else { return nil }
        return (id, token)
    }

    /// The login a request names whose requester token the browser's
    /// cookie holds, its sign-in and app; nil for none (no cookie, a wrong
    /// token, a login no sign-in opened).
    private func attempt(_ request: Request, id: String?) async throws -> (ApprovalEvent, OpenIDSignIn, APIKey)? {
        guard let (eventID, secret) = attemptCookie(request, id: id) else { return nil }
        let event: ApprovalEvent
        do {
            event = try await EventController.event(eventID, heldBy: .requester(secret: secret), in: environment)
        } catch let error as APIError where error.status == .notFound {
            return nil
        }
        guard let signIn = try await environment.store.openIDSignIn(eventID: event.id),
            let key = try await environment.store.apiKey(id: signIn.apiKeyID)
        else { return nil }
        return (event, signIn, key)
    }

    private func clearCookie(_ eventID: String) -> String {
        cookies.setting(.openIDSignIn(eventID: eventID), "", maxAge: 0)
    }

    private static var noAttempt: Response {
        HostedPage.response(
            HostedPage.failure(
                "No sign-in is waiting in this browser. Start again from the app.", returnURL: nil,
                title: "Not signed in"),
            status: .badRequest)
    }

    /// The redirect URI with an OAuth error, `state` and `iss`.
    func errorRedirect(_ url: String, error: ErrorCode, description: String, state: String?) -> String {
        HostedPage.errorRedirect(url, error: error, description: description, state: state, issuer: environment.issuer)
    }
}
