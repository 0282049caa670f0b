import CountersignCore
import CountersignQR
import CountersignStore
import Foundation
import Hummingbird
import Logging

/// What an operator does from the console: each action is confirmed on
/// the page, carries the session's CSRF token, and is written to the
/// audit log once it is done.
struct ConsoleActions {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<ConsoleRequestContext> {
        RouteCollection(context: ConsoleRequestContext.self)
            .post("sign-out", use: signOut)
            .post("devices/:device/remove", use: removeDevice)
            .post("protections/end", use: endProtection)
            .post("enrollments", use: issueEnrollment)
    }

    /// Ends the session on the server (its cookie takes nothing more,
    /// wherever it was copied to), with its audit line.
    @Sendable func signOut(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let access = ConsoleAccess(environment: environment)
        try await access.signOut(context.signedIn, address: context.clientAddress)
        context.logger.info("operator signed out", metadata: ["operator": "\(context.signedIn.name)"])
        return Response(
            status: .noContent,
            headers: [
                .setCookie: access.cookies.setting(.session, "", maxAge: 0),
                .cacheControl: "no-store",
            ])
    }

    /// Removes a trusted device (of any app's user): it can approve nothing
    /// more, its long-polls end, and its change names the operator.
    @Sendable func removeDevice(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        DeviceDocument
    > {
        let id = try context.parameters.require("device")
        guard let device = try await environment.store.device(id: id) else {
            throw APIError.notFound("no such device")
        }
        try Self.refuseAtConsole(device.issuer)
        guard device.revokedAt == nil else {
            throw APIError.conflict(.deviceRemoved, "this device was removed already")
        }
        let removed = try await environment.revoke(
            id, issuer: device.issuer, user: device.clientUserID,
            author: ChangeAuthor(actor: ChangeAuthor.consoleOperator(context.signedIn.name), ip: context.clientAddress))
        try await audit(.deviceRemoved, target: id, context: context)
        return JSONBody(DeviceDocument(removed))
    }

    struct UserAtApp: Decodable {
        let apiKeyID: String?
        let user: String?
        enum CodingKeys: String, CodingKey {
            case user
            case apiKeyID = "api_key_id"
        }

        /// The app's key (unrevoked) and the user id, or a 400 / 404.
        func resolve(in environment: BrokerEnvironment) async throws -> (APIKey, String) {
            guard let user, ClientUserID.isValid(user) else { throw APIError.badRequest("user is missing or invalid") }
            guard let id = apiKeyID, let key = try await environment.store.apiKey(id: id), key.revokedAt == nil else {
                throw APIError.notFound("no unrevoked API key \(apiKeyID ?? "")")
            }
            return (key, user)
        }
    }

    struct Ended: Encodable, Sendable { let ended: Bool }

    /// Ends a user's fraud protection before its time: requesters may ask
    /// for them again (a user who reported by mistake, and called).
    @Sendable func endProtection(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<Ended> {
        let (key, user) = try await request.decodeJSON(UserAtApp.self, context: context).resolve(in: environment)
        try Self.refuseAtConsole(key.id)
        let now = environment.now()
        let ended = try await environment.store.endProtection(
            issuer: key.id, clientUserID: user, now: now,
            audit: AuditRecord(
                at: now, actor: context.signedIn.name, action: .fraudProtectionEnded, target: key.id + "/" + user,
                ip: context.clientAddress))
        guard ended else { throw APIError.conflict(.notProtected, "\(user) has no fraud protection running") }
        return JSONBody(Ended(ended: true))
    }

    /// A one-time token that enrolls a device of a user, as the app's
    /// backend would ask for, with the links that use it and their QR code.
    struct EnrollmentDocument: Encodable, Sendable {
        let token: String
        let apiKeyID: String
        let user: String
        let expiresAt: Date
        /// Opens the web approver ready to enroll, on a phone.
        let link: String
        /// The link's QR code: rows of `1` (dark) and `0`.
        let qr: [String]
        enum CodingKeys: String, CodingKey {
            case token, user, link, qr
            case apiKeyID = "api_key_id"
            case expiresAt = "expires_at"
        }
    }

    @Sendable func issueEnrollment(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        EnrollmentDocument
    > {
        let (key, user) = try await request.decodeJSON(UserAtApp.self, context: context).resolve(in: environment)
        // An operator's devices are enrolled from the host: a link made
        // here would let one operator sign in as another.
        try Self.refuseAtConsole(key.id)
        try await environment.requireEnabled(user)
        let now = environment.now()
        let token = "et_" + SecretToken.generate(bytes: 32)
        let record = EnrollmentToken(
            digest: SecretToken.digest(token), issuer: key.id, clientUserID: user, createdAt: now,
            expiresAt: now + environment.policy.enrollmentTokenLifetime)
        try await environment.store.insertEnrollmentToken(record)
        try await Self.audit(.enrollmentIssued, target: key.id + "/" + user, context: context, in: environment)
        let link = WebApproverLink.enrollment(
            broker: environment.issuer, apiKeyID: key.id, user: user, token: token)
        return JSONBody(
            EnrollmentDocument(
                token: token, apiKeyID: key.id, user: user, expiresAt: record.expiresAt, link: link,
                qr: try QRMatrix(link).rows),
            status: .created)
    }

    /// The console's own app and its operators' devices are the host's to
    /// change: one operator cannot lock another out, nor sign in as them.
    static func refuseAtConsole(_ apiKeyID: String) throws {
        if let refusal = ConsoleApp.refusal(of: .consoleAction, apiKeyID: apiKeyID) {
            throw APIError.conflict(.consoleApp, refusal)
        }
    }

    /// Writes an action's audit line, after it was done.
    static func audit(
        _ action: AuditRecord.Action, target: String, context: ConsoleRequestContext, in environment: BrokerEnvironment
    ) async throws {
        try await environment.store.appendAudit(
            AuditRecord(
                at: environment.now(), actor: context.signedIn.name, action: action, target: target,
                ip: context.clientAddress))
    }

    private func audit(_ action: AuditRecord.Action, target: String, context: ConsoleRequestContext) async throws {
        try await Self.audit(action, target: target, context: context, in: environment)
    }
}
