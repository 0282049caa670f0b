import CountersignCore
import Crypto
import Foundation

/// What a browser does around an authenticator (WebAuthn Level 3, §5.1.3
/// and §5.1.4), done by the agent for a FIDO2 security key: the client data
/// it collects, the relying party it names, and the wire types the broker
/// takes (proto/signing.md §10), made from what the key returned. Pure: the
/// key itself is ``SecurityKeyDevice``'s.
struct SecurityKeyCeremony: Sendable, Equatable {
    /// The broker's RP ID, which scopes the credential.
    let rpID: String
    /// The origin the client data names: the broker's, at its RP ID.
    let origin: Origin

    /// The ceremony for the broker at `broker` (the URL in the agent's
    /// credential), by the broker's own rule (``RelyingParty/of(broker:)``):
    /// its host when that is a domain name; for a loopback address,
    /// `localhost` on the same port. Any other address is refused.
    init(broker: String) throws(AgentFailure) {
        guard let origin = Origin(url: broker) else {
            throw AgentFailure("the broker URL \(shown(broker)) is not an http(s) URL")
        }
        guard let (relyingParty, named) = RelyingParty.of(broker: origin) else {
            throw AgentFailure(
                "a passkey needs the broker's URL to name a domain (WebAuthn takes no address), and this "
                    + "machine knows the broker as \(shown(origin.description)): enroll it with the broker's name, "
                    + "e.g. https://auth.example.com")
        }
        self.rpID = relyingParty.id
        self.origin = named
    }

    /// `clientDataJSON` (§5.8.1) as a browser serializes it, members in its
    /// order, for a ceremony of `type` (`webauthn.create` or `webauthn.get`).
    func clientData(_ type: String, challenge: Data) -> Data {
        func quoted(_ text: String) -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .withoutEscapingSlashes
            return String(decoding: (try? encoder.encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
        }
        return Data(
            ("{\"type\":\(quoted(type)),\"challenge\":\(quoted(Base64URL.encode(challenge))),"
                + "\"origin\":\(quoted(origin.description)),\"crossOrigin\":false}").utf8)
    }

    /// What the key signs over: SHA-256 of the client data.
    static func clientDataHash(_ clientData: Data) -> Data { Data(SHA256.hash(data: clientData)) }

    /// The registration the broker takes, from what `fido_dev_make_cred`
    /// returned: the credential id and the raw authenticator data, wrapped in
    /// an attestation object of format `none` (the broker asks for no
    /// attestation, and the key's own statement is not sent).
    func registration(clientData: Data, credentialID: Data, authenticatorData: Data) throws(AgentFailure)
        -> PasskeyRegistration
    {
        guard !credentialID.isEmpty, authenticatorData.count >= 37 else {
            throw AgentFailure("the security key returned no credential")
        }
        let attestation = CBOR.map([
            .init(.text("fmt"), .text("none")), .init(.text("attStmt"), .map([])),
            .init(.text("authData"), .bytes(authenticatorData)),
        ])
        return PasskeyRegistration(
            credentialID: Base64URL.encode(credentialID), clientDataJSON: Base64URL.encode(clientData),
            attestationObject: Base64URL.encode(attestation.encoded), transports: ["usb"])
    }

    /// The assertion the broker takes, from what `fido_dev_get_assert`
    /// returned for the passkey `credentialID` (base64url). libfido2 1.12
    /// gives the authenticator data as a CBOR byte string
    /// (`fido_assert_authdata_ptr`), unwrapped here. A key may leave out the
    /// credential id when it was asked for one only (CTAP2 §6.2): that one.
    func assertion(
        clientData: Data, credentialID: String, returnedID: Data, wrappedAuthenticatorData: Data, signature: Data
    ) throws(AgentFailure) -> PasskeyAssertion {
        guard case .bytes(let authenticatorData)? = try? CBOR.decode(wrappedAuthenticatorData),
            authenticatorData.count >= 37
        else {
            throw AgentFailure("the security key's authenticator data is not the CBOR byte string libfido2 gives")
        }
        guard returnedID.isEmpty || Base64URL.encode(returnedID) == credentialID else {
            throw AgentFailure("the security key answered with another credential than this device's passkey")
        }
        guard !signature.isEmpty else { throw AgentFailure("the security key returned no signature") }
        return PasskeyAssertion(
            credentialID: credentialID, authenticatorData: Base64URL.encode(authenticatorData),
            clientDataJSON: Base64URL.encode(clientData), signature: Base64URL.encode(signature))
    }
}
