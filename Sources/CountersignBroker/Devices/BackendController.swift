import CountersignCore
import CountersignStore
import Foundation
import Hummingbird

/// What an app backend asks about its users: their events and devices.
struct BackendController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<BackendRequestContext> {
        RouteCollection(context: BackendRequestContext.self)
            .get("users/:user/events", use: listEvents)
            .get("users/:user/devices", use: listDevices)
            .delete("users/:user/devices/:device", use: revokeDevice)
            .get("users/:user/device-changes", use: listDeviceChanges)
            .get("users/:user/decisions", use: listDecisions)
    }

    struct EventList: Encodable, Sendable { let events: [EventDocument] }
    struct DeviceList: Encodable, Sendable { let devices: [DeviceDocument] }
    struct DeviceChangeList: Encodable, Sendable { let changes: [DeviceChangeDocument] }

    @Sendable func listEvents(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<EventList> {
        let user = try context.parameters.userID()
        var status: EventStatus? = nil
        if let text = request.uri.queryParameters["status"] {
            guard let parsed = EventStatus(rawValue: String(text)) else {
                throw APIError.badRequest("status must be one of pending, approved, rejected, expired")
            }
            status = parsed
        }
        let limit = try request.limit()
        let events = try await environment.store.events(
            issuer: context.apiKey.id, clientUserID: user, status: status, now: environment.now(), limit: limit)
        var documents: [EventDocument] = []
        for event in events { documents.append(try await environment.document(for: event, withToken: true)) }
        return JSONBody(EventList(events: documents))
    }

    @Sendable func listDevices(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<DeviceList>
    {
        let user = try context.parameters.userID()
        let devices = try await environment.store.devices(issuer: context.apiKey.id, clientUserID: user)
        return JSONBody(DeviceList(devices: devices.map(DeviceDocument.init)))
    }

    @Sendable func revokeDevice(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<
        DeviceDocument
    > {
        let user = try context.parameters.userID()
        let deviceID = try context.parameters.require("device")
        let device = try await environment.revoke(
            deviceID, issuer: context.apiKey.id, user: user,
            author: ChangeAuthor(actor: ChangeAuthor.backend, ip: context.clientAddress))
        return JSONBody(DeviceDocument(device))
    }

    /// The user's device audit log, newest first.
    @Sendable func listDeviceChanges(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<
        DeviceChangeList
    > {
        let user = try context.parameters.userID()
        let limit = try request.limit()
        let changes = try await environment.store.deviceChanges(
            issuer: context.apiKey.id, clientUserID: user, limit: limit)
        return JSONBody(DeviceChangeList(changes: changes.map(DeviceChangeDocument.init)))
    }

    /// The user's decisions, newest first: each event as it stood when it
    /// was approved or rejected, kept after the event itself is collected.
    @Sendable func listDecisions(_ request: Request, context: BackendRequestContext) async throws -> Response {
        let user = try context.parameters.userID()
        let records = try await environment.store.decisionRecords(
            issuer: context.apiKey.id, clientUserID: user, limit: try request.limit())
        // The documents as they were stored, as they are.
        var body = ByteBuffer(string: #"{"decisions":["#)
        for (index, record) in records.enumerated() {
            if index > 0 { body.writeString(",") }
            body.writeBytes(record.document)
        }
        body.writeString("]}")
        return Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: body))
    }
}
