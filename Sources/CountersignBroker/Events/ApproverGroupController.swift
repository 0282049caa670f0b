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

    struct GroupDocument: Encodable, Sendable {
        let name: String
        let users: [String]
        let updatedAt: Date
        let updatedVia: String

        init(_ group: ApproverGroup) {
            name = group.name
            users = group.users
            updatedAt = group.updatedAt
            updatedVia = group.updatedVia
        }

        enum CodingKeys: String, CodingKey {
            case name, users
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

    @Sendable func list(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<GroupList> {
        let groups = try await environment.store.approverGroups(issuer: context.apiKey.id)
        return JSONBody(GroupList(groups: groups.map(GroupDocument.init)))
    }

    @Sendable func show(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<GroupDocument> {
        let name = try context.parameters.require("name")
        guard let group = try await environment.store.approverGroup(issuer: context.apiKey.id, name: name) else {
            throw APIError.notFound("no approver group of this app is named \(name.debugDescription)")
        }
        return JSONBody(GroupDocument(group))
    }

    /// Creates the group (201) or replaces its users (200). Events made
    /// before keep the approvers they were made with.
    @Sendable func put(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<GroupDocument> {
        let name = try context.parameters.require("name")
        let body = try await request.decodeJSON(PutRequest.self, context: context)
        if let refusal = ApproverGroup.refusal(name: name, users: body.users) { throw APIError.badRequest(refusal) }
        let group = ApproverGroup(
            issuer: context.apiKey.id, name: name, users: body.users, updatedAt: environment.now(), updatedVia: "rest")
        let created = try await environment.store.putApproverGroup(group)
        context.logger.info(
            "approver group set", metadata: ["group": "\(name)", "users": "\(body.users.count)"])
        return JSONBody(GroupDocument(group), status: created ? .created : .ok)
    }

    @Sendable func remove(_ request: Request, context: BackendRequestContext) async throws -> Response {
        let name = try context.parameters.require("name")
        do {
            try await environment.store.deleteApproverGroup(issuer: context.apiKey.id, name: name)
        } catch let error as StoreError where error.code == .notFound {
            throw APIError.notFound("no approver group of this app is named \(name.debugDescription)")
        }
        context.logger.info("approver group deleted", metadata: ["group": "\(name)"])
        return Response(status: .noContent)
    }
}
