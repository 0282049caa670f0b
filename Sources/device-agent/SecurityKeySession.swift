import CountersignClient
import CountersignCore
import Foundation

/// This device's passkey on a FIDO2 security key, ready for one command:
/// the ceremony for the device's broker, the key opened, and its PIN asked
/// once, before anything is signed, so that typing it does not eat into a
/// proof's or a decision's 60 seconds.
struct SecurityKeySession: Sendable {
    let ceremony: SecurityKeyCeremony
    let device: SecurityKeyDevice
    /// The key's PIN; nil when it verifies its owner by itself.
    let pin: String?

    /// How long the key waits to be touched.
    static let touchTimeout: Duration = .seconds(25)

    /// Opens the first security key for a passkey at `broker`, through the
    /// libfido2 the loader finds as `library`. The PIN is asked with `askPIN`
    /// when the key has no built-in verification (a fingerprint reader), or
    /// always with `alwaysPIN`.
    static func open(
        broker: String, library: String = FIDO2Library.defaultName, alwaysPIN: Bool = false,
        askPIN: (_ prompt: String) async throws -> String?
    ) async throws -> SecurityKeySession {
        let ceremony = try SecurityKeyCeremony(broker: broker)
        let device = try SecurityKeyDevice(library: try FIDO2Library.load(library))
        guard alwaysPIN || !device.verifiesBuiltIn else {
            return SecurityKeySession(ceremony: ceremony, device: device, pin: nil)
        }
        guard device.hasPIN else {
            throw AgentFailure(
                "the security key \(shown(device.product)) has no PIN\(device.verifiesBuiltIn ? "" : " and no fingerprint") "
                    + "set, so it cannot verify you: set a PIN on it first (e.g. fido2-token -S, from fido2-tools)")
        }
        guard let pin = try await askPIN("PIN of the security key \(shown(device.product)): "), !pin.isEmpty else {
            throw AgentFailure("no PIN given for the security key")
        }
        return SecurityKeySession(ceremony: ceremony, device: device, pin: pin)
    }

    /// What to ask of the person before each use of the key.
    var touchPrompt: String {
        pin == nil
            ? "Touch the fingerprint reader of the security key \(shown(device.product))…"
            : "Touch the security key \(shown(device.product))…"
    }

    /// A new passkey for `credential`'s device, for `challenge` (its device
    /// proof's): user id the device id, name the app's user id.
    func register(challenge: Data, for credential: DeviceCredential) async throws -> PasskeyRegistration {
        let clientData = ceremony.clientData("webauthn.create", challenge: challenge)
        let made = try await device.makeCredential(
            clientDataHash: SecurityKeyCeremony.clientDataHash(clientData), rpID: ceremony.rpID,
            userID: Data(credential.deviceID.utf8), userName: credential.clientUserID,
            displayName: "\(credential.clientUserID) (\(credential.name))", pin: pin, timeout: Self.touchTimeout)
        return try ceremony.registration(
            clientData: clientData, credentialID: made.id, authenticatorData: made.authenticatorData)
    }

    /// An assertion of the passkey `credentialID` (base64url) for `challenge`.
    func assert(challenge: Data, credentialID: String, timeout: Duration = touchTimeout) async throws
        -> PasskeyAssertion
    {
        guard let rawID = Base64URL.decode(credentialID) else {
            throw AgentFailure("the broker's credential id of this device's passkey is not base64url")
        }
        let clientData = ceremony.clientData("webauthn.get", challenge: challenge)
        let got = try await device.getAssertion(
            clientDataHash: SecurityKeyCeremony.clientDataHash(clientData), rpID: ceremony.rpID,
            credentialID: rawID, pin: pin, timeout: timeout)
        return try ceremony.assertion(
            clientData: clientData, credentialID: credentialID, returnedID: got.id,
            wrappedAuthenticatorData: got.wrappedAuthenticatorData, signature: got.signature)
    }
}
