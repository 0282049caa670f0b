import CountersignCore
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
                .setCookie: access.cookies.setting(ConsoleCookies.session, "", maxAge: 0, path: "/console/"),
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
        let removed = try await environment.revoke(
            id, issuer: device.issuer, user: device.clientUserID,
            author: ChangeAuthor(actor: ChangeAuthor.consoleOperator(context.signedIn.name), ip: context.clientAddress))
        try await audit(.deviceRemoved, target: id, context: context)
        return JSONBody(DeviceDocument(removed))
    }

    /// Writes the action's audit line, after it was done.
    private func audit(_ action: AuditRecord.Action, target: String, context: ConsoleRequestContext) async throws {
        try await environment.store.appendAudit(
            AuditRecord(
                at: environment.now(), actor: context.signedIn.name, action: action, target: target,
                ip: context.clientAddress))
    }
}
