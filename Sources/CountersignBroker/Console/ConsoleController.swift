import CountersignApprover
import CountersignCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The operator's console at `/console/`: its page, served as the web
/// approver's is, and signing in. What it shows and does, signing out
/// too, is in ``ConsoleReads`` and ``ConsoleActions``.
struct ConsoleController {
    let environment: BrokerEnvironment

    var access: ConsoleAccess { ConsoleAccess(environment: environment) }

    /// The page and its files, and the steps of signing in: open to anyone.
    func register(on router: RouterGroup<BrokerRequestContext>) {
        router.get("console") { request, _ in
            guard request.uri.path.hasSuffix("/") else {
                return Response(
                    status: .movedPermanently, headers: [.location: "/console/", .cacheControl: "no-cache"])
            }
            return WebAssetResponse.serve(ConsoleAssets.files["index.html"], request)
        }
        router.get("console/:file") { request, context in
            WebAssetResponse.serve(ConsoleAssets.files[try context.parameters.require("file")], request)
        }
        router.post("console/api/sign-in", use: startSignIn)
        router.get("console/api/sign-in", use: awaitSignIn)
        router.delete("console/api/sign-in", use: withdrawSignIn)
        router.post("console/api/session", use: finishSignIn)
    }

    struct SignInRequest: Decodable {
        let `operator`: String?
    }

    struct SignInDocument: Encodable, Sendable {
        let status: String
        let matchNumber: String?
        let `operator`: String
        let expiresAt: Date
        enum CodingKeys: String, CodingKey {
            case status, `operator`
            case matchNumber = "match_number"
            case expiresAt = "expires_at"
        }

        init(_ event: ApprovalEvent, now: Date) {
            status = event.status(at: now).rawValue
            matchNumber = event.matchNumber
            self.operator = event.clientUserID
            expiresAt = event.expiresAt
        }
    }

    struct SessionDocument: Encodable, Sendable {
        let `operator`: String
        let csrfToken: String
        let signedInAt: Date
        let expiresAt: Date
        enum CodingKeys: String, CodingKey {
            case `operator`
            case csrfToken = "csrf_token"
            case signedInAt = "signed_in_at"
            case expiresAt = "expires_at"
        }

        init(_ session: ConsoleSession, secret: String) {
            self.operator = session.operatorName
            csrfToken = BrowserCookies.csrfToken(forSessionSecret: secret)
            signedInAt = session.createdAt
            expiresAt = session.expiresAt
        }
    }

    /// Asks the named operator's devices to approve this sign-in; the page
    /// shows the number to type there.
    @Sendable func startSignIn(_ request: Request, context: BrokerRequestContext) async throws -> JSONBody<
        SignInDocument
    > {
        try access.requireSameOrigin(request)
        let body = try await request.decodeJSON(SignInRequest.self, context: context)
        // Started again: the earlier request stops asking the device.
        if let earlier = try? ConsoleAccess.Attempt(request, cookies: access.cookies) {
            try await access.withdraw(earlier)
        }
        let (event, attempt) = try await access.startSignIn(
            name: body.operator ?? "", address: context.clientAddress)
        let maxAge = max(1, Int(event.expiresAt.timeIntervalSince(environment.now()).rounded(.up)) + 60)
        return JSONBody(
            SignInDocument(event, now: environment.now()), status: .created,
            headers: [
                .setCookie: access.cookies.setting(.attempt, attempt.cookieValue, maxAge: maxAge)
            ])
    }

    /// The waiting sign-in, held up to `?wait=N` seconds until it is decided.
    @Sendable func awaitSignIn(_ request: Request, context: BrokerRequestContext) async throws -> JSONBody<
        SignInDocument
    > {
        let attempt = try ConsoleAccess.Attempt(request, cookies: access.cookies)
        let wait = try request.waitSeconds(max: environment.policy.maxWait)
        let settled = try await LongPoll(environment: environment).event(
            attempt.eventID, wait: wait, holder: "requester/" + attempt.eventID
        ) { try await attempt.event(in: environment) }
        return JSONBody(SignInDocument(settled, now: environment.now()))
    }

    /// The operator starts again: the waiting sign-in is withdrawn, so
    /// their device stops asking, and its cookie cleared. 204 also when
    /// nothing was waiting.
    @Sendable func withdrawSignIn(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        try access.requireSameOrigin(request)
        if let attempt = try? ConsoleAccess.Attempt(request, cookies: access.cookies) {
            try await access.withdraw(attempt)
        }
        return Response(
            status: .noContent, headers: [.setCookie: access.cookies.setting(.attempt, "", maxAge: 0)])
    }

    /// The approved sign-in becomes a session: its cookie replaces the
    /// attempt's, and the page gets the CSRF token.
    @Sendable func finishSignIn(_ request: Request, context: BrokerRequestContext) async throws -> JSONBody<
        SessionDocument
    > {
        try access.requireSameOrigin(request)
        let (session, secret) = try await access.finishSignIn(
            try ConsoleAccess.Attempt(request, cookies: access.cookies), address: context.clientAddress)
        context.logger.info("operator signed in", metadata: ["operator": "\(session.operatorName)"])
        var headers = HTTPFields()
        headers.append(
            HTTPField(
                name: .setCookie,
                value: access.cookies.setting(.session, secret, maxAge: Int(ConsoleSessionRule.lifetime))))
        headers.append(
            HTTPField(
                name: .setCookie,
                value: access.cookies.setting(.attempt, "", maxAge: 0)))
        return JSONBody(SessionDocument(session, secret: secret), status: .created, headers: headers)
    }
}
