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
    }

    struct EventList: Encodable, Sendable { let events: [EventDocument] }
    struct DeviceList: Encodable, Sendable { let devices: [DeviceDocument] }

    @Sendable func listEvents(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<EventList> {
        let user = try context.parameters.userID()
        var status: EventStatus? = nil
        if let text = request.uri.queryParameters["status"] {
            guard let parsed = EventStatus(rawValue: String(text)) else {
                throw APIError.badRequest("status must be one of pending, approved, rejected, expired")
            }
            status = parsed
        }
        var limit = 50
        if let text = request.uri.queryParameters["limit"] {
            guard let parsed = Int(text), (1...200).contains(parsed) else {
                throw APIError.badRequest("limit must be between 1 and 200")
            }
            limit = parsed
        }
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
        let device = try await environment.store.revokeDevice(
            id: deviceID, issuer: context.apiKey.id, clientUserID: user,
            author: ChangeAuthor(actor: ChangeAuthor.backend, ip: context.clientAddress), now: environment.now())
        // Ends the revoked device's inbox long-poll at once.
        environment.hub.notify(WakeHub.inboxKey(issuer: device.issuer, user: device.clientUserID))
        return JSONBody(DeviceDocument(device))
    }
}
