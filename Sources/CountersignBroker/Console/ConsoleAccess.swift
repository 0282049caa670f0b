import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird

/// Who may use the console: signing in by a Countersign login of the
/// console's app, and the session cookie each later request carries.
struct ConsoleAccess {
    let environment: BrokerEnvironment

    var cookies: BrowserCookies { BrowserCookies(issuer: environment.issuer) }

    /// The operator a request's session cookie stands for; 401 for no
    /// cookie, an unknown, ended or expired session, or one made at another
    /// address (a copied cookie). A request that changes anything must
    /// also come from the console's own page (``requireSameOrigin(_:)``)
    /// and carry the session's CSRF token.
    func signedIn(_ request: Request, address: String) async throws -> ConsoleOperator {
        let refused = APIError.notSignedIn(ConsoleSessionRule.Verdict.unknown.refusal ?? "")
        guard let secret = cookies.value(.session, in: request.headers) else { throw refused }
        let session = try await environment.store.consoleSession(digest: SecretToken.digest(secret))
        guard ConsoleSessionRule.check(session, address: address, now: environment.now()) == .valid, let session
        else { throw refused }
        // The session lasts no longer than the device that approved it can
        // act (removed, or suspended by the directory), nor than the
        // console's app (revoked on the host, it signs all out).
        guard let event = try await environment.store.event(id: session.eventID),
            let deviceID = event.decidedBy, let device = try await environment.store.device(id: deviceID),
            device.canAct, let key = try await environment.store.apiKey(id: ConsoleApp.apiKeyID),
            key.revokedAt == nil
        else { throw refused }
        if ![.get, .head].contains(request.method) {
            try requireSameOrigin(request)
            let expected = BrowserCookies.csrfToken(forSessionSecret: secret)
            guard let sent = request.headers[.csrfToken],
                SecretToken.constantTimeEquals(Data(sent.utf8), Data(expected.utf8))
            else {
                throw APIError.forbidden(.csrf, "send the session's CSRF token in X-CSRF-Token")
            }
        }
        return ConsoleOperator(session: session, secret: secret)
    }

    /// Refuses a request that a page of another site made.
    func requireSameOrigin(_ request: Request) throws {
        try request.requireSameOrigin(environment.origins, "the console takes changes from its own page only")
    }
}

extension ConsoleAccess {
    /// A sign-in waiting for its approval: the pending login's id and
    /// requester token, held in the attempt cookie.
    struct Attempt {
        let eventID: String
        let requesterToken: String

        init(eventID: String, requesterToken: String) {
            self.eventID = eventID
            self.requesterToken = requesterToken
        }

        init(_ request: Request, cookies: BrowserCookies) throws {
            guard let value = cookies.value(.attempt, in: request.headers),
                let dot = value.firstIndex(of: ".")
            else { throw APIError.notSignedIn("no sign-in is waiting: start again") }
            eventID = String(value[..<dot])
            requesterToken = String(value[value.index(after: dot)...])
        }

        var cookieValue: String { eventID + "." + requesterToken }

        /// The console's login, if the cookie's token is its requester token.
        func event(in environment: BrokerEnvironment) async throws -> ApprovalEvent {
            let refused = APIError.notSignedIn("no sign-in is waiting: start again")
            let event: ApprovalEvent
            do {
                event = try await EventController.event(
                    eventID, heldBy: .requester(secret: requesterToken), in: environment)
            } catch let error as APIError where error.status == .notFound {
                throw refused
            }
            guard event.issuer == ConsoleApp.apiKeyID, event.name == EventName.login else { throw refused }
            return event
        }
    }

    /// Opens a pending LOGIN of the console's app for `name`, as a requester
    /// at `address`: the requester limits and fraud protection apply, and
    /// the answer is the same whether or not `name` is an operator or has a
    /// device (an operator's name is not told to whoever asks).
    func startSignIn(name: String, address: String) async throws -> (ApprovalEvent, Attempt) {
        guard Operator.isValid(name: name) else { throw APIError.badRequest("operator is missing or invalid") }
        guard let key = try await environment.store.apiKey(id: ConsoleApp.apiKeyID), key.revokedAt == nil else {
            throw APIError.conflict(
                .noOperators,
                "the console has no operators yet: add one on the host with `device-broker operator add NAME`")
        }
        let opened = try await PendingEvents(environment: environment).open(
            PendingEvents.Draft(
                key: key, user: name, name: EventName.login, ip: address,
                details: "Sign in to the operator's console", requesterName: "Countersign console",
                limits: environment.policy.pendingLimits.forSignInPage, channel: .console),
            by: .requester(address: address), holdsSecret: false)
        return (opened.event, Attempt(eventID: opened.event.id, requesterToken: opened.requesterToken))
    }

    /// Withdraws the attempt's login if it is still pending; an unknown,
    /// decided or ended one is left as it is.
    func withdraw(_ attempt: Attempt) async throws {
        guard let event = try? await attempt.event(in: environment) else { return }
        let now = environment.now()
        guard Withdrawal.evaluate(event, now: now) == .withdraw else { return }
        do {
            _ = try await EventTransitions(environment: environment).withdraw(event, now: now)
        } catch let error as APIError where error.status == .conflict {
            // Decided meanwhile: nothing to withdraw.
        }
    }

    /// Starts the session an approved attempt earns, if its user is an
    /// operator; the sign-in is written to the audit log, and so is a
    /// refusal of an approved non-operator.
    func finishSignIn(_ attempt: Attempt, address: String) async throws -> (session: ConsoleSession, secret: String) {
        let event = try await attempt.event(in: environment)
        // Finished where it was started: an attempt cookie carried
        // elsewhere signs in nobody.
        guard event.ip == address else { throw APIError.notSignedIn("no sign-in is waiting: start again") }
        let now = environment.now()
        switch ConsoleSessionRule.signIn(event, consoleAppID: ConsoleApp.apiKeyID, now: now) {
        case .notConsoleLogin: throw APIError.notSignedIn("no sign-in is waiting: start again")
        case .notApproved:
            throw APIError.conflict(.notApproved, "the sign-in was not approved: \(event.status(at: now).rawValue)")
        case .notByDevice:
            throw APIError.conflict(.notApproved, "the console takes an approval on a trusted device, not a code")
        case .tooLate: throw APIError.conflict(.notApproved, "the approval is too old to sign in with: start again")
        case .signIn: break
        }
        let secret = SecretToken.generate(bytes: 32)
        let session = ConsoleSession(
            digest: SecretToken.digest(secret), operatorName: event.clientUserID, eventID: event.id, ip: address,
            createdAt: now, expiresAt: now + ConsoleSessionRule.lifetime)
        do {
            try await environment.store.startConsoleSession(
                session,
                audit: AuditRecord(
                    at: now, actor: event.clientUserID, action: .signedIn, target: event.id, ip: address))
        } catch let error as StoreError where error.code == .notFound {
            try await environment.store.appendAudit(
                AuditRecord(
                    at: now, actor: event.clientUserID, action: .signInRefused, target: event.id, ip: address))
            throw APIError.forbidden(.notOperator, "\(event.clientUserID) is not an operator of this console")
        } catch let error as StoreError where error.code == .alreadyExists {
            throw APIError.conflict(.notApproved, "this approval signed in once already: start again")
        }
        return (session, secret)
    }

    /// Ends the session on the server, with its audit line.
    func signOut(_ signedIn: ConsoleOperator, address: String) async throws {
        let now = environment.now()
        _ = try await environment.store.endConsoleSession(
            digest: signedIn.session.digest, now: now,
            audit: AuditRecord(
                at: now, actor: signedIn.name, action: .signedOut, target: signedIn.session.eventID, ip: address))
    }
}
