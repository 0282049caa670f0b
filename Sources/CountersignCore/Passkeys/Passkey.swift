import Crypto
public import Foundation

/// A passkey (a WebAuthn credential) that protects a trusted device's
/// approvals: an approval an event requires user verification for carries
/// an assertion of this credential, made with the owner's fingerprint, face
/// or PIN. The format and the checks are in proto/signing.md §10.
public struct Passkey: Sendable, Equatable {
    /// The credential id, base64url.
    public var credentialID: String
    /// The credential's public key (ES256).
    public var publicKey: DevicePublicKey
    /// The last signature counter seen; 0 for an authenticator that keeps none.
    public var signCount: UInt32
    /// The authenticator's model, as it reports it (unattested).
    public var aaguid: UUID
    /// How the browser says it reaches the authenticator (`internal`, `usb`, …).
    public var transports: [String]
    /// Whether the credential may be synced to the owner's other devices.
    public var backupEligible: Bool
    public var createdAt: Date

    public init(
        credentialID: String, publicKey: DevicePublicKey, signCount: UInt32, aaguid: UUID, transports: [String],
        backupEligible: Bool, createdAt: Date
    ) {
        self.credentialID = credentialID
        self.publicKey = publicKey
        self.signCount = signCount
        self.aaguid = aaguid
        self.transports = transports
        self.backupEligible = backupEligible
        self.createdAt = createdAt
    }
}

/// The broker as a WebAuthn relying party: its RP ID (the host of its
/// public URL) and the origins its pages are served from.
public struct RelyingParty: Sendable, Equatable {
    public var id: String
    public var origins: Set<Origin>

    public init(id: String, origins: Set<Origin>) {
        self.id = id
        self.origins = origins
    }

    /// The RP of a broker whose tokens name `issuer` and that answers at
    /// `origins`: its ID is the issuer's host if that is a domain, else the
    /// first origin's that is (`localhost` for a broker on a loopback
    /// address); nil when none is, since WebAuthn takes no address.
    public init?(issuer: Origin, origins: Set<Origin>) {
        let candidates = [issuer] + origins.sorted { $0.description < $1.description }
        guard let domain = candidates.first(where: { $0.host.contains(where: \.isLetter) && !$0.host.contains(":") })
        else { return nil }
        self.init(id: domain.host, origins: origins.union([issuer]))
    }

    var idHash: Data { Data(SHA256.hash(data: Data(id.utf8))) }

    /// The RP of a broker known at `broker` (the URL a client or backend
    /// was given), by the rule above and what a broker on a loopback
    /// address also answers at, `localhost` on the same port; and the
    /// origin at its RP ID that client data names. Nil for another
    /// address: WebAuthn takes none.
    public static func of(broker: Origin) -> (relyingParty: RelyingParty, origin: Origin)? {
        let local = broker.isLoopback ? Origin(url: "\(broker.scheme)://localhost:\(broker.port)") : nil
        guard let relyingParty = RelyingParty(issuer: broker, origins: Set([local].compactMap { $0 })),
            let named = ([broker] + [local].compactMap { $0 }).first(where: { $0.host == relyingParty.id })
        else { return nil }
        return (relyingParty, named)
    }
}

/// What the browser collected (WebAuthn Level 3, §5.8.1), as far as the
/// broker reads it.
struct CollectedClientData: Decodable {
    var type: String
    var challenge: String
    var origin: String
    var crossOrigin: Bool?
    var topOrigin: String?

    /// Parses `json` and checks it was made by a page of `relyingParty`, in
    /// no other site's frame, for `type` and `challenge`.
    static func check(
        _ json: Data, type: String, challenge: Data, relyingParty: RelyingParty
    ) throws(ProtocolError) -> CollectedClientData {
        let collected: CollectedClientData
        do {
            collected = try JSONDecoder().decode(CollectedClientData.self, from: json)
        } catch {
            throw ProtocolError(.malformed, "the client data is not WebAuthn's JSON")
        }
        guard collected.type == type else {
            throw ProtocolError(.wrongType, "the client data is of type \(collected.type), not \(type)")
        }
        guard let given = Base64URL.decode(collected.challenge), SecretToken.constantTimeEquals(given, challenge)
        else {
            throw ProtocolError(.wrongChallenge, "the passkey signed another challenge than this one")
        }
        guard let origin = Origin(url: collected.origin), relyingParty.origins.contains(origin),
            collected.origin == origin.description
        else {
            throw ProtocolError(.wrongOrigin, "the passkey was used on \(collected.origin), not this broker's page")
        }
        // As a browser would (WebAuthn §5.1.3: the RP ID is the origin's
        // host or a domain it is under): the broker's other origins, e.g.
        // its address, are not pages of this RP ID, and a backend checking
        // the assertion later at the RP ID's origin would refuse it.
        guard origin.host == relyingParty.id || origin.host.hasSuffix("." + relyingParty.id) else {
            throw ProtocolError(.wrongOrigin, "the passkey was used on \(collected.origin), outside \(relyingParty.id)")
        }
        guard collected.crossOrigin != true, collected.topOrigin == nil else {
            throw ProtocolError(.wrongOrigin, "the passkey was used inside another site's frame")
        }
        return collected
    }
}

/// A new passkey as the browser returns it from `navigator.credentials.create`.
public struct PasskeyRegistration: Codable, Sendable, Equatable {
    /// The credential id (`rawId`), base64url.
    public var credentialID: String
    /// `response.clientDataJSON`, base64url.
    public var clientDataJSON: String
    /// `response.attestationObject`, base64url.
    public var attestationObject: String
    /// `response.getTransports()`.
    public var transports: [String]?

    enum CodingKeys: String, CodingKey {
        case credentialID = "credential_id"
        case clientDataJSON = "client_data_json"
        case attestationObject = "attestation_object"
        case transports
    }

    public init(credentialID: String, clientDataJSON: String, attestationObject: String, transports: [String]?) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
    }

    /// Checks the registration (WebAuthn Level 3, §7.1) for `challenge` at
    /// `relyingParty`, with the user verified, and returns the passkey to
    /// keep. Attestation is not checked: the broker asks for none, so the
    /// AAGUID is what the authenticator says of itself.
    public func verify(challenge: Data, relyingParty: RelyingParty, now: Date) throws(ProtocolError) -> Passkey {
        guard let clientData = Base64URL.decode(clientDataJSON), let attestation = Base64URL.decode(attestationObject),
            let rawID = Base64URL.decode(credentialID)
        else {
            throw ProtocolError(.malformed, "the passkey's fields must be base64url")
        }
        _ = try CollectedClientData.check(
            clientData, type: "webauthn.create", challenge: challenge, relyingParty: relyingParty)
        let object = try CBOR.decode(attestation)
        guard case .text? = object["fmt"], case .map? = object["attStmt"], case .bytes(let bytes)? = object["authData"]
        else {
            throw ProtocolError(.malformed, "the attestation object has no fmt, attStmt and authData")
        }
        let data = try AuthenticatorData(bytes)
        try data.check(relyingParty: relyingParty, userVerification: true)
        guard let credential = data.attestedCredential else {
            throw ProtocolError(.malformed, "the authenticator data carries no new credential")
        }
        guard credential.credentialID == rawID else {
            throw ProtocolError(.malformed, "the credential id is not the one the authenticator made")
        }
        let aaguid = credential.aaguid.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) }
        return Passkey(
            credentialID: credentialID, publicKey: credential.publicKey, signCount: data.signCount, aaguid: aaguid,
            transports: transports ?? [], backupEligible: data.flags.contains(.backupEligible), createdAt: now)
    }
}

/// A passkey's assertion, as the browser returns it from
/// `navigator.credentials.get`, sent with the decision it commits to.
public struct PasskeyAssertion: Codable, Sendable, Equatable {
    /// The credential id (`rawId`), base64url.
    public var credentialID: String
    /// `response.authenticatorData`, base64url.
    public var authenticatorData: String
    /// `response.clientDataJSON`, base64url.
    public var clientDataJSON: String
    /// `response.signature`: ECDSA, DER-encoded as WebAuthn has it, base64url.
    public var signature: String

    enum CodingKeys: String, CodingKey {
        case credentialID = "credential_id"
        case authenticatorData = "authenticator_data"
        case clientDataJSON = "client_data_json"
        case signature
    }

    public init(credentialID: String, authenticatorData: String, clientDataJSON: String, signature: String) {
        self.credentialID = credentialID
        self.authenticatorData = authenticatorData
        self.clientDataJSON = clientDataJSON
        self.signature = signature
    }

    /// The challenge a passkey signs: SHA-256 of the ASCII signing input
    /// (`header.payload`) of a JWS the device signed first, so the
    /// assertion commits to everything that JWS does. For an approval, the
    /// decision; for a registration, the request's device proof.
    public static func challenge(for token: String) throws(ProtocolError) -> Data {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw ProtocolError(.malformed, "the signed JWS is not compact") }
        return Data(SHA256.hash(data: Data("\(parts[0]).\(parts[1])".utf8)))
    }

    /// Checks the assertion (WebAuthn Level 3, §7.2) of the passkey with
    /// `credentialID` and `publicKey` for `challenge` at `relyingParty`,
    /// with the user verified; returns the
    /// authenticator data, whose counter the caller keeps. Given
    /// `storedSignCount`, a counter that does not go up (when either is not
    /// 0) is refused: the credential may have been cloned.
    public func verify(
        of credentialID: String, publicKey: DevicePublicKey, challenge: Data, relyingParty: RelyingParty,
        storedSignCount: UInt32?
    ) throws(ProtocolError) -> AuthenticatorData {
        guard self.credentialID == credentialID else {
            throw ProtocolError(.wrongKey, "the assertion is of another passkey than the device's")
        }
        guard let clientData = Base64URL.decode(clientDataJSON),
            let authenticator = Base64URL.decode(authenticatorData),
            let der = Base64URL.decode(signature)
        else {
            throw ProtocolError(.malformed, "the assertion's fields must be base64url")
        }
        _ = try CollectedClientData.check(
            clientData, type: "webauthn.get", challenge: challenge, relyingParty: relyingParty)
        let data = try AuthenticatorData(authenticator)
        try data.check(relyingParty: relyingParty, userVerification: true)
        guard let ecdsa = try? P256.Signing.ECDSASignature(derRepresentation: der),
            publicKey.signingKey.isValidSignature(
                ecdsa, for: authenticator + Data(SHA256.hash(data: clientData)))
        else {
            throw ProtocolError(.badSignature, "the assertion's signature does not verify with the passkey")
        }
        if let stored = storedSignCount, stored != 0 || data.signCount != 0, data.signCount <= stored {
            throw ProtocolError(
                .signCount, "the passkey's counter went from \(stored) to \(data.signCount): it may have been copied")
        }
        return data
    }
}

extension AuthenticatorData {
    /// The RP ID hash is the broker's, the user was present, and (asked
    /// for) verified.
    func check(relyingParty: RelyingParty, userVerification: Bool) throws(ProtocolError) {
        guard rpIDHash == relyingParty.idHash else {
            throw ProtocolError(.wrongOrigin, "the passkey is scoped to another site than \(relyingParty.id)")
        }
        guard flags.contains(.userPresent) else {
            throw ProtocolError(.userNotVerified, "the authenticator says nobody was present")
        }
        if userVerification, !flags.contains(.userVerified) {
            throw ProtocolError(.userNotVerified, "the authenticator did not verify its owner (fingerprint, face, PIN)")
        }
    }
}
