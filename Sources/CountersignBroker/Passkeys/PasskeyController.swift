import CountersignCore
import CountersignStore
import Crypto
import Foundation
import Hummingbird

/// A trusted device's passkey: registered, replaced and removed with a
/// device proof, and checked with every approval of an event that requires
/// user verification (proto/signing.md §10).
struct PasskeyController {
    let environment: BrokerEnvironment

    var deviceEndpoints: RouteCollection<DeviceRequestContext> {
        RouteCollection(context: DeviceRequestContext.self)
            .put("devices/self/passkey", use: register)
            .delete("devices/self/passkey", use: remove)
    }

    /// A registration, and for a device that has a passkey already an
    /// assertion of it: the owner verified by the passkey in place agrees
    /// to its replacement, not whoever holds the unlocked device.
    struct RegisterRequest: Decodable {
        let registration: PasskeyRegistration
        let assertion: PasskeyAssertion?

        init(from decoder: any Decoder) throws {
            registration = try PasskeyRegistration(from: decoder)
            enum Keys: String, CodingKey { case assertion }
            assertion = try decoder.container(keyedBy: Keys.self).decodeIfPresent(
                PasskeyAssertion.self, forKey: .assertion)
        }
    }

    @Sendable func register(_ request: Request, context: DeviceRequestContext) async throws -> JSONBody<
        DeviceDocument
    > {
        let relyingParty = try environment.relyingParty()
        let body = try await request.decodeJSON(RegisterRequest.self, context: context)
        // The challenge is this request's own device proof: fresh, and good once.
        let challenge = try OwnerVerification.challenge(of: request)
        try await OwnerVerification(environment: environment).require(
            of: context.device, assertion: body.assertion, challenge: challenge, doing: "replacing it",
            keepingCounter: false)
        let now = environment.now()
        let passkey: Passkey
        do {
            passkey = try body.registration.verify(challenge: challenge, relyingParty: relyingParty, now: now)
        } catch {
            throw APIError.invalid(.invalidPasskey, error)
        }
        do {
            try await environment.store.setPasskey(
                passkey, deviceID: context.device.id, by: context.author, at: now)
        } catch let error as StoreError where error.code == .alreadyExists {
            throw APIError.conflict(.passkeyExists, "this passkey protects another device already")
        }
        var device = context.device
        device.passkey = passkey
        return JSONBody(DeviceDocument(device))
    }

    /// Removes the device's passkey: its approvals of events that require
    /// user verification are refused from then on. It takes an assertion of
    /// that passkey: otherwise whoever holds the unlocked device could
    /// remove the owner's passkey and register their own in its place. An
    /// owner who lost the passkey removes the device from another one and
    /// pairs it again.
    @Sendable func remove(_ request: Request, context: DeviceRequestContext) async throws -> JSONBody<
        DeviceDocument
    > {
        guard context.device.passkey != nil else {
            try await request.requireObjectIfBody(context: context)
            return JSONBody(DeviceDocument(context.device))
        }
        try await OwnerVerification(environment: environment).require(
            of: context.device, assertion: try await OwnerVerification.assertion(in: request, context: context),
            challenge: try OwnerVerification.challenge(of: request), doing: "removing it", keepingCounter: false)
        try await environment.store.setPasskey(
            nil, deviceID: context.device.id, by: context.author, at: environment.now())
        var device = context.device
        device.passkey = nil
        return JSONBody(DeviceDocument(device))
    }
}

extension BrokerEnvironment {
    /// The broker as a WebAuthn relying party, or a refusal when none of its
    /// public URLs names a domain (WebAuthn takes no address as the RP ID).
    func relyingParty() throws -> RelyingParty {
        guard let origin = Origin(url: issuer), let relyingParty = RelyingParty(issuer: origin, origins: origins) else {
            throw APIError.passkeysUnavailable
        }
        return relyingParty
    }
}
