import CountersignCore
import CountersignStore
import Foundation
import Hummingbird

/// The apps' groups of approvers from the console (``ApproverGroup``): the
/// people an event's `approvers.group` names, listed for every app, set
/// or replaced, and deleted (``ApproverGroupChanges``, as the backends do);
/// each change asked first on the page and audited once done.
struct ConsoleApproverGroups {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<ConsoleRequestContext> {
        RouteCollection(context: ConsoleRequestContext.self)
            .get("approver-groups", use: list)
            .put("apps/:app/approver-groups/:name", use: put)
            .delete("apps/:app/approver-groups/:name", use: remove)
    }

    var changes: ApproverGroupChanges { ApproverGroupChanges(store: environment.store) }

    /// Every unrevoked app's groups, by app name then group name.
    @Sendable func list(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        ApproverGroupController.GroupList
    > {
        var groups: [ApproverGroupDocument] = []
        let apps = try await environment.store.apiKeys().filter { $0.revokedAt == nil && $0.id != ConsoleApp.apiKeyID }
        for app in apps.sorted(by: { ($0.name, $0.id) < ($1.name, $1.id) }) {
            groups += try await environment.store.approverGroups(issuer: app.id).map {
                ApproverGroupDocument($0, app: app.name)
            }
        }
        return JSONBody(ApproverGroupController.GroupList(groups: groups))
    }

    @Sendable func put(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        ApproverGroupDocument
    > {
        let (app, name) = try await target(context)
        let body = try await request.decodeJSON(ApproverGroupChanges.Users.self, context: context)
        let (group, created) = try await changes.set(
            issuer: app.id, name: name, users: body.users, via: "console:" + context.signedIn.name,
            now: environment.now())
        try await ConsoleActions.audit(
            .approverGroupSet, target: app.id + "/" + name, context: context, in: environment)
        return JSONBody(ApproverGroupDocument(group, app: app.name), status: created ? .created : .ok)
    }

    @Sendable func remove(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let (app, name) = try await target(context)
        try await changes.delete(issuer: app.id, name: name)
        try await ConsoleActions.audit(
            .approverGroupDeleted, target: app.id + "/" + name, context: context, in: environment)
        return Response(status: .noContent)
    }

    /// The app (an unrevoked one, not the console's own) and group name the path names.
    private func target(_ context: ConsoleRequestContext) async throws -> (APIKey, String) {
        let id = try context.parameters.require("app")
        try ConsoleActions.refuseAtConsole(id)
        guard let app = try await environment.store.apiKey(id: id) else {
            throw APIError.notFound("no unrevoked app \(id)")
        }
        return (app, try context.parameters.require("name"))
    }
}
