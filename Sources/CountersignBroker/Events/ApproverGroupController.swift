import CountersignCore
import CountersignStore
import Foundation
import Hummingbird
import Logging

/// An app backend's groups of approvers (``ApproverGroup``), under its API
/// key: what an event's `approvers.group` names before the directory's.
struct ApproverGroupController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<BackendRequestContext> {
        RouteCollection(context: BackendRequestContext.self)
            .get("approver-groups", use: list)
            .get("approver-groups/:name", use: show)
            .put("approver-groups/:name", use: put)
            .delete("approver-groups/:name", use: remove)
    }

    struct GroupList: Encodable, Sendable {
        let groups: [ApproverGroupDocument]
    }

    var changes: ApproverGroupChanges { ApproverGroupChanges(store: environment.store) }

    @Sendable func list(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<GroupList> {
        let groups = try await environment.store.approverGroups(issuer: context.apiKey.id)
        return JSONBody(GroupList(groups: groups.map { ApproverGroupDocument($0) }))
    }

    @Sendable func show(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<
        ApproverGroupDocument
    > {
        let name = try context.parameters.require("name")
        guard let group = try await environment.store.approverGroup(issuer: context.apiKey.id, name: name) else {
            throw APIError.notFound("no approver group of this app is named \(name.debugDescription)")
        }
        return JSONBody(ApproverGroupDocument(group))
    }

    /// Creates the group (201) or replaces its users (200). Events made
    /// before keep the approvers they were made with.
    @Sendable func put(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<
        ApproverGroupDocument
    > {
        let name = try context.parameters.require("name")
        let body = try await request.decodeJSON(ApproverGroupChanges.Users.self, context: context)
        let (group, created) = try await changes.set(
            issuer: context.apiKey.id, name: name, users: body.users, via: "rest", now: environment.now())
        context.logger.info("approver group set", metadata: ["group": "\(name)", "users": "\(body.users.count)"])
        return JSONBody(ApproverGroupDocument(group), status: created ? .created : .ok)
    }

    @Sendable func remove(_ request: Request, context: BackendRequestContext) async throws -> Response {
        let name = try context.parameters.require("name")
        try await changes.delete(issuer: context.apiKey.id, name: name)
        context.logger.info("approver group deleted", metadata: ["group": "\(name)"])
        return Response(status: .noContent)
    }
}

/// An approver group as the API shows it; with its app (`api_key_id`,
/// `app`: its name) where several apps' groups are listed, as the console does.
struct ApproverGroupDocument: Encodable, Sendable {
    let apiKeyID: String?
    let app: String?
    let name: String
    let users: [String]
    let updatedAt: Date
    let updatedVia: String

    init(_ group: ApproverGroup, app: String? = nil) {
        apiKeyID = app == nil ? nil : group.issuer
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

/// Setting and deleting an app's approver group, the same for its backend
/// and the console: the rule (``ApproverGroup/refusal(name:users:)``), then
/// the store, with their refusals as the API answers them.
struct ApproverGroupChanges {
    let store: any CountersignStore

    /// The body that sets a group.
    struct Users: Decodable {
        let users: [String]
    }

    /// Sets the group, or replaces its users; says whether it was new.
    func set(issuer: String, name: String, users: [String], via: String, now: Date) async throws -> (
        ApproverGroup, created: Bool
    ) {
        if let refusal = ApproverGroup.refusal(name: name, users: users) { throw APIError.badRequest(refusal) }
        let group = ApproverGroup(issuer: issuer, name: name, users: users, updatedAt: now, updatedVia: via)
        do {
            return (group, try await store.putApproverGroup(group))
        } catch let error as StoreError where error.code == .notFound {
            throw APIError.notFound("no unrevoked app \(issuer)")
        }
    }

    func delete(issuer: String, name: String) async throws {
        do {
            try await store.deleteApproverGroup(issuer: issuer, name: name)
        } catch let error as StoreError where error.code == .notFound {
            throw APIError.notFound("no approver group of this app is named \(name.debugDescription)")
        }
    }
}
