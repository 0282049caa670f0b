import CountersignCore
import CountersignStore
import Foundation
import Hummingbird

/// The device owner's say-so on a request a device signs: an assertion of
/// the device's passkey, its owner verified, for the challenge of that
/// request's own device proof (proto/signing.md §10). Replacing or
/// removing a passkey takes it whenever the device has one; under a key
/// whose policy requires user verification, so do the requests that would
/// let whoever holds the unlocked device around it (``UserVerificationRule``).
struct OwnerVerification {
    let environment: BrokerEnvironment

    /// What such a request may carry: `{"assertion": {...}}`, or no body.
    struct Body: Decodable {
        let assertion: PasskeyAssertion?
    }

    /// The assertion in `request`'s body, if it has one.
    static func assertion(in request: Request, context: DeviceRequestContext) async throws -> PasskeyAssertion? {
        guard request.hasBody else { return nil }
        return try await request.decodeJSON(Body.self, context: context).assertion
    }

    /// The challenge of `request`: SHA-256 of its device proof's signing input.
    static func challenge(of request: Request) throws -> Data {
        guard let proof = request.headers[.deviceProof] else {
            throw APIError.unauthorized("this call needs a device proof (Device-Proof header)")
        }
        return try PasskeyAssertion.challenge(for: proof)
    }

    /// Checks that the owner, verified by `device`'s passkey, agrees to this
    /// request (whose proof gives `challenge`). A device without a passkey
    /// needs none, unless `required`. The counter must go up, as for an
    /// approval, so a copied passkey cannot stand in; with `keepingCounter`
    /// (the passkey stays) it is kept, else the caller replaces or removes
    /// the passkey in the write that follows.
    func require(
        of device: TrustedDevice, assertion: PasskeyAssertion?, challenge: Data, doing what: String,
        required: Bool = false, keepingCounter: Bool
    ) async throws {
        guard let current = device.passkey else {
            guard !required else {
                throw APIError(
                    .forbidden, .userVerificationRequired,
                    "\(what) takes the owner verified by a passkey; this device has none: use one that has")
            }
            return
        }
        guard let assertion else {
            throw APIError(
                .forbidden, .userVerificationRequired,
                "this device has a passkey: \(what) takes an assertion of that passkey")
        }
        let data: AuthenticatorData
        do {
            data = try assertion.verify(
                of: current.credentialID, publicKey: current.publicKey, challenge: challenge,
                relyingParty: try environment.relyingParty(), storedSignCount: current.signCount)
        } catch let error as ProtocolError {
            throw APIError.invalid(.invalidPasskey, error)
        }
        guard keepingCounter else { return }
        do {
            try await environment.store.advancePasskeySignCount(
                deviceID: device.id, credentialID: current.credentialID, to: data.signCount)
        } catch let error as StoreError where error.code == .conflict {
            throw APIError.conflict(.signCount, "the passkey was used for another request meanwhile; try again")
        }
    }
}
