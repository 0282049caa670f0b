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
        guard let proof = request.headers[.deviceProof] else {
            throw APIError.unauthorized("this call needs a device proof (Device-Proof header)")
        }
        let challenge = try PasskeyAssertion.challenge(for: proof)
        let now = environment.now()
        if let current = context.device.passkey {
            guard let assertion = body.assertion else {
                throw APIError(
                    .forbidden, "user_verification_required",
                    "this device has a passkey: replacing it takes an assertion of that passkey")
            }
            do {
                _ = try assertion.verify(
                    of: current.credentialID, publicKey: current.publicKey, challenge: challenge,
                    relyingParty: relyingParty, storedSignCount: nil)
            } catch {
                throw APIError.invalid("invalid_passkey", error)
            }
        }
        let passkey: Passkey
        do {
            passkey = try body.registration.verify(challenge: challenge, relyingParty: relyingParty, now: now)
        } catch {
            throw APIError.invalid("invalid_passkey", error)
        }
        do {
            try await environment.store.setPasskey(passkey, deviceID: context.device.id)
        } catch let error as StoreError where error.code == .alreadyExists {
            throw APIError.conflict("passkey_exists", "this passkey protects another device already")
        }
        var device = context.device
        device.passkey = passkey
        return JSONBody(DeviceDocument(device))
    }

    /// Removes the device's passkey: its approvals of events that require
    /// user verification are refused from now on.
    @Sendable func remove(_ request: Request, context: DeviceRequestContext) async throws -> JSONBody<
        DeviceDocument
    > {
        try await environment.store.setPasskey(nil, deviceID: context.device.id)
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
            throw APIError(
                .serviceUnavailable, "passkeys_unavailable",
                "passkeys need the broker's public URL to name a domain (localhost on one machine), not an address")
        }
        return relyingParty
    }
}
