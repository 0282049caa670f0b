public import Crypto
import Foundation

/// A device's public key as an RFC 7517 JWK: ECDSA P-256 only.
///
/// The device id is the RFC 7638 thumbprint of this key, so the id alone
/// commits to the key and no two devices can share one.
public struct DevicePublicKey: Codable, Sendable, Hashable {
    /// Key type; always `EC`.
    public let kty: String
    /// Curve; always `P-256`.
    public let crv: String
    /// The x coordinate, 32 bytes, base64url.
    public let x: String
    /// The y coordinate, 32 bytes, base64url.
    public let y: String

    /// Validates a JWK received from outside: type, curve, coordinate sizes
    /// and that the point lies on the curve.
    public init(kty: String, crv: String, x: String, y: String) throws(ProtocolError) {
        guard kty == "EC", crv == "P-256" else {
            throw ProtocolError(.invalidKey, "device keys must be EC P-256 JWKs")
        }
        guard let xBytes = Base64URL.decode(x), let yBytes = Base64URL.decode(y),
            xBytes.count == 32, yBytes.count == 32
        else {
            throw ProtocolError(.invalidKey, "x and y must be 32-byte base64url values")
        }
        guard (try? P256.Signing.PublicKey(x963Representation: [0x04] + xBytes + yBytes)) != nil else {
            throw ProtocolError(.invalidKey, "the point is not on the P-256 curve")
        }
        self.kty = kty
        self.crv = crv
        self.x = x
        self.y = y
    }

    /// The JWK of a CryptoKit public key.
    public init(_ key: P256.Signing.PublicKey) {
        let raw = key.rawRepresentation  // x || y
        self.kty = "EC"
        self.crv = "P-256"
        self.x = Base64URL.encode(raw.prefix(32))
        self.y = Base64URL.encode(raw.suffix(32))
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        do {
            try self.init(
                kty: container.decode(String.self, forKey: .kty),
                crv: container.decode(String.self, forKey: .crv),
                x: container.decode(String.self, forKey: .x),
                y: container.decode(String.self, forKey: .y)
            )
        } catch let error as ProtocolError {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    private enum CodingKeys: String, CodingKey {
        case kty, crv, x, y
    }

    /// A key as a store keeps it (its JWK as JSON), decoded and validated
    /// once per process: every device-authenticated request reads its
    /// device, and a stored key never changes (its id is its thumbprint).
    public static func stored(_ json: String) throws -> DevicePublicKey {
        if let known = storedKeys[json] { return known }
        let key = try JSONDecoder().decode(DevicePublicKey.self, from: Data(json.utf8))
        storedKeys.insert(key, for: json)
        return key
    }

    private static let storedKeys = ProcessCache<String, DevicePublicKey>()

    /// The key as a CryptoKit verification key.
    public var signingKey: P256.Signing.PublicKey {
        // Validated in init, so this cannot fail.
        try! P256.Signing.PublicKey(rawRepresentation: Base64URL.decode(x)! + Base64URL.decode(y)!)
    }

    /// RFC 7638 thumbprint: SHA-256 over the required members in
    /// lexicographic order with no white space, base64url-encoded.
    public var thumbprint: String {
        let canonical = #"{"crv":"\#(crv)","kty":"\#(kty)","x":"\#(x)","y":"\#(y)"}"#
        return Base64URL.encode(SHA256.hash(data: Data(canonical.utf8)))
    }

    /// A short fingerprint a person can compare: the first 8 bytes of the
    /// thumbprint as four groups of hex.
    public var fingerprint: String {
        let digest = Array(SHA256.hash(data: Data(thumbprint.utf8)).prefix(8))
        return stride(from: 0, to: 8, by: 2).map { String(format: "%02X%02X", digest[$0], digest[$0 + 1]) }
            .joined(separator: "-")
    }
}

extension DevicePublicKey: WireJSONWritable {
    public func write(to object: inout WireJSON.Object) {
        object.field("crv", crv)
        object.field("kty", kty)
        object.field("x", x)
        object.field("y", y)
    }
}
