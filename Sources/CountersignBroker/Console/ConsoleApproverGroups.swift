import CountersignCore
import CountersignStore
import Foundation
import Hummingbird

/// The apps' groups of approvers from the console (``ApproverGroup``): the
/// people an event's `approvers.group` names, listed for every app, set
/// or replaced, and deleted; each change asked first on the page and
/// audited once done.
struct ConsoleApproverGroups {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<ConsoleRequestContext> {
        RouteCollection(context: ConsoleRequestContext.self)
            .get("approver-groups", use: list)
            .put("apps/:app/approver-groups/:name", use: put)
            .delete("apps/:app/approver-groups/:name", use: remove)
    }

    struct GroupDocument: Encodable, Sendable {
        let apiKeyID: String
        let app: String
        let name: String
        let users: [String]
        let updatedAt: Date
        let updatedVia: String

        init(_ group: ApproverGroup, app: String) {
            apiKeyID = group.issuer
            self.app = app
            name = group.name
            users = group.users
            updatedAt = group.updatedAt
            updatedVia = group.updatedVia
        }

        enum CodingKeys: String, CodingKey {
            case app, name, users
            case apiKeyID = "api_key_id"
            case updatedAt = "updated_at"
            case updatedVia = "updated_via"
        }
    }

    struct GroupList: Encodable, Sendable {
        let groups: [GroupDocument]
    }

    struct PutRequest: Decodable {
        let users: [String]
    }

    /// Every unrevoked app's groups, by app name then group name.
    @Sendable func list(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<GroupList> {
        var groups: [GroupDocument] = []
        let apps = try await environment.store.apiKeys().filter { $0.revokedAt == nil && $0.id != ConsoleApp.apiKeyID }
        for app in apps.sorted(by: { ($0.name, $0.id) < ($1.name, $1.id) }) {
            groups += try await environment.store.approverGroups(issuer: app.id).map {
                GroupDocument($0, app: app.name)
            }
        }
        return JSONBody(GroupList(groups: groups))
    }

    @Sendable func put(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<GroupDocument> {
        let (app, name) = try await target(context)
        let body = try await request.decodeJSON(PutRequest.self, context: context)
        if let refusal = ApproverGroup.refusal(name: name, users: body.users) { throw APIError.badRequest(refusal) }
        let group = ApproverGroup(
            issuer: app.id, name: name, users: body.users, updatedAt: environment.now(),
            updatedVia: "console:" + context.signedIn.name)
        let created: Bool
        do {
            created = try await environment.store.putApproverGroup(group)
        } catch let error as StoreError where error.code == .notFound {
            throw APIError.notFound("no unrevoked app \(app.id)")
        }
        try await ConsoleActions.audit(
            .approverGroupSet, target: app.id + "/" + name, context: context, in: environment)
        return JSONBody(GroupDocument(group, app: app.name), status: created ? .created : .ok)
    }

    @Sendable func remove(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let (app, name) = try await target(context)
        do {
            try await environment.store.deleteApproverGroup(issuer: app.id, name: name)
        } catch let error as StoreError where error.code == .notFound {
            throw APIError.notFound("\(app.name) has no approver group \(name.debugDescription)")
        }
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
