public import Foundation

/// WebAuthn authenticator data (Level 3, §6.1): what the authenticator
/// says of itself and signs, in the layout
/// `rpIdHash(32) flags(1) signCount(4) [attestedCredentialData] [extensions]`.
public struct AuthenticatorData: Sendable, Equatable {
    /// SHA-256 of the RP ID the credential is scoped to.
    public var rpIDHash: Data
    public var flags: Flags
    /// The signature counter; 0 when the authenticator keeps none.
    public var signCount: UInt32
    /// With the AT flag: the new credential (at registration).
    public var attestedCredential: AttestedCredential?

    /// The flag bits.
    public struct Flags: OptionSet, Sendable, Equatable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// User present: someone touched or confirmed.
        public static let userPresent = Flags(rawValue: 0x01)
        /// User verified: by PIN, biometrics or the device's screen lock.
        public static let userVerified = Flags(rawValue: 0x04)
        /// The credential may be backed up (synced).
        public static let backupEligible = Flags(rawValue: 0x08)
        /// The credential is backed up.
        public static let backedUp = Flags(rawValue: 0x10)
        /// Attested credential data follows.
        public static let attestedCredentialData = Flags(rawValue: 0x40)
        /// Extension data follows.
        public static let extensionData = Flags(rawValue: 0x80)
    }

    /// A credential as the authenticator created it.
    public struct AttestedCredential: Sendable, Equatable {
        /// The authenticator's model (all zeros when it does not say).
        public var aaguid: Data
        public var credentialID: Data
        /// The credential's public key (ES256 only).
        public var publicKey: DevicePublicKey
    }

    /// The bytes as sent, which the assertion's signature covers.
    public let bytes: Data

    /// Parses authenticator data; its attested credential's key must be an
    /// ES256 COSE key (the only algorithm the broker asks for).
    public init(_ data: Data) throws(ProtocolError) {
        let bytes = [UInt8](data)
        guard bytes.count >= 37 else { throw ProtocolError(.malformed, "authenticator data shorter than 37 bytes") }
        self.bytes = data
        rpIDHash = Data(bytes[0..<32])
        flags = Flags(rawValue: bytes[32])
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        var offset = 37
        if flags.contains(.attestedCredentialData) {
            guard bytes.count >= offset + 18 else {
                throw ProtocolError(.malformed, "attested credential data is cut short")
            }
            let aaguid = Data(bytes[offset..<offset + 16])
            let idLength = Int(bytes[offset + 16]) << 8 | Int(bytes[offset + 17])
            offset += 18
            guard idLength >= 1, idLength <= 1023, bytes.count >= offset + idLength else {
                throw ProtocolError(.malformed, "the credential id is empty, too long or cut short")
            }
            let credentialID = Data(bytes[offset..<offset + idLength])
            offset += idLength
            let (cose, length) = try CBOR.decodePrefix(Data(bytes[offset...]))
            offset += length
            attestedCredential = AttestedCredential(
                aaguid: aaguid, credentialID: credentialID, publicKey: try Self.es256Key(cose))
        }
        if flags.contains(.extensionData) {
            let (_, length) = try CBOR.decodePrefix(Data(bytes[offset...]))
            offset += length
        }
        guard offset == bytes.count else { throw ProtocolError(.malformed, "bytes after the authenticator data") }
    }

    /// An ES256 key in COSE (RFC 9053 §7.1): kty EC2 (2), alg ES256 (-7),
    /// crv P-256 (1), x and y of 32 bytes.
    static func es256Key(_ cose: CBOR) throws(ProtocolError) -> DevicePublicKey {
        guard cose[1]?.integer == 2, cose[3]?.integer == -7, cose[-1]?.integer == 1 else {
            throw ProtocolError(.wrongAlgorithm, "the credential's key is not ES256 on P-256")
        }
        guard case .bytes(let x)? = cose[-2], case .bytes(let y)? = cose[-3], x.count == 32, y.count == 32 else {
            throw ProtocolError(.invalidKey, "the credential's key has no 32-byte x and y")
        }
        return try DevicePublicKey(kty: "EC", crv: "P-256", x: Base64URL.encode(x), y: Base64URL.encode(y))
    }
}
