import CountersignCore
import CountersignStore
import Foundation
import Hummingbird
import Logging

/// An app backend's quorum policies (``QuorumPolicy``), under its API key:
/// which of its event names need several approvers, whoever asks.
struct QuorumPolicyController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<BackendRequestContext> {
        RouteCollection(context: BackendRequestContext.self)
            .get("quorum-policies", use: list)
            .put("quorum-policies/:event", use: put)
            .delete("quorum-policies/:event", use: remove)
    }

    struct PolicyDocument: Encodable, Sendable {
        let event: String
        let users: [String]?
        let group: String?
        let requiredApprovals: Int
        let allowRequester: Bool
        let updatedAt: Date
        let updatedVia: String

        init(_ policy: QuorumPolicy) {
            event = policy.event
            users = policy.users
            group = policy.group
            requiredApprovals = policy.requiredApprovals
            allowRequester = policy.allowRequester
            updatedAt = policy.updatedAt
            updatedVia = policy.updatedVia
        }

        enum CodingKeys: String, CodingKey {
            case event, users, group
            case requiredApprovals = "required_approvals"
            case allowRequester = "allow_requester"
            case updatedAt = "updated_at"
            case updatedVia = "updated_via"
        }
    }

    struct PolicyList: Encodable, Sendable {
        let policies: [PolicyDocument]
    }

    @Sendable func list(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<PolicyList> {
        let policies = try await environment.store.quorumPolicies(issuer: context.apiKey.id)
        return JSONBody(PolicyList(policies: policies.map(PolicyDocument.init)))
    }

    /// Sets the policy of an event name (201 new, 200 replaced): from then
    /// on every event of that name at the app needs the quorum, whoever
    /// asks. Events made before keep what they were made with.
    @Sendable func put(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<PolicyDocument> {
        let event = try context.parameters.require("event")
        let body = try await request.decodeJSON(EventController.ApproversRequest.self, context: context)
        guard let required = body.requiredApprovals else {
            throw APIError.badRequest("required_approvals: how many of the approvers must approve")
        }
        if let refusal = QuorumPolicy.refusal(
            event: event, users: body.users, group: body.group, requiredApprovals: required)
        {
            throw APIError.badRequest(refusal)
        }
        let policy = QuorumPolicy(
            issuer: context.apiKey.id, event: event, users: body.users, group: body.group,
            requiredApprovals: required, allowRequester: body.allowRequester ?? false, updatedAt: environment.now(),
            updatedVia: "rest")
        let created = try await environment.store.putQuorumPolicy(policy)
        context.logger.info(
            "quorum policy set", metadata: ["event": "\(event)", "required": "\(required)"])
        return JSONBody(PolicyDocument(policy), status: created ? .created : .ok)
    }

    @Sendable func remove(_ request: Request, context: BackendRequestContext) async throws -> Response {
        let event = try context.parameters.require("event")
        do {
            try await environment.store.deleteQuorumPolicy(issuer: context.apiKey.id, event: event)
        } catch let error as StoreError where error.code == .notFound {
            throw APIError.notFound("this app has no quorum policy for \(event.debugDescription)")
        }
        context.logger.info("quorum policy deleted", metadata: ["event": "\(event)"])
        return Response(status: .noContent)
    }
}
