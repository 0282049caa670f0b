import CountersignCore
import CountersignStore
import Hummingbird

/// A trusted device on its user's devices: itself, the list, and removing
/// one (itself included).
struct DeviceController {
    let environment: BrokerEnvironment

    /// What a device reads of itself, suspended or not.
    var readEndpoints: RouteCollection<DeviceReaderContext> {
        RouteCollection(context: DeviceReaderContext.self)
            .get("devices/self", use: me)
            .get("devices", use: devices)
    }

    var endpoints: RouteCollection<DeviceRequestContext> {
        RouteCollection(context: DeviceRequestContext.self)
            .delete("devices/:device", use: remove)
    }

    /// The calling device itself: a way to check it is still enrolled.
    @Sendable func me(_ request: Request, context: DeviceReaderContext) async throws -> JSONBody<DeviceDocument> {
        JSONBody(DeviceDocument(context.device))
    }

    /// The user's devices, revoked ones included, with this one marked.
    @Sendable func devices(_ request: Request, context: DeviceReaderContext) async throws -> JSONBody<
        DeviceListDocument
    > {
        let devices = try await environment.store.devices(
            issuer: context.device.issuer, clientUserID: context.device.clientUserID)
        return JSONBody(DeviceListDocument(devices: devices.map(DeviceDocument.init), thisDevice: context.device.id))
    }

    /// Revokes one of the user's devices (this one included), signed by
    /// this trusted device.
    @Sendable func remove(_ request: Request, context: DeviceRequestContext) async throws -> JSONBody<DeviceDocument> {
        let deviceID = try context.parameters.require("device")
        if deviceID != context.device.id,
            UserVerificationRule.accountChangeNeedsOwner(key: context.apiKey.userVerification)
        {
            try await OwnerVerification(environment: environment).require(
                of: context.device, assertion: try await OwnerVerification.assertion(in: request, context: context),
                challenge: try OwnerVerification.challenge(of: request), doing: "removing another device",
                required: true, keepingCounter: true)
        }
        let device = try await environment.revoke(
            deviceID, issuer: context.device.issuer, user: context.device.clientUserID,
            author: context.author)
        return JSONBody(DeviceDocument(device))
    }
}
