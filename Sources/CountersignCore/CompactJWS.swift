public import Crypto
import Foundation
public import JWTKit

/// The protected header fields Countersign reads from a compact JWS.
public struct JOSEHeader: Codable, Sendable, Equatable {
    /// Signature algorithm; Countersign accepts only `ES256`.
    public var alg: String?
    /// Media type of the whole JWS, naming what kind of object it is.
    public var typ: String?
    /// Key id: a device id (JWK thumbprint) or a broker signing-key id.
    public var kid: String?
}

/// Parsing, signing and verification of compact ES256 JWS values, on top of
/// jwt-kit, with the strict header checks every Countersign object needs.
public enum CompactJWS {
    /// Reads the protected header without verifying anything.
    public static func header(of token: String) throws(ProtocolError) -> JOSEHeader {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else {
            throw ProtocolError(.malformed, "expected a compact JWS with three non-empty parts")
        }
        guard let headerData = Base64URL.decode(parts[0]),
            let header = try? JSONDecoder().decode(JOSEHeader.self, from: headerData)
        else {
            throw ProtocolError(.malformed, "the JWS header is not base64url-encoded JSON")
        }
        guard Base64URL.decode(parts[1]) != nil, Base64URL.decode(parts[2]) != nil else {
            throw ProtocolError(.malformed, "the JWS payload or signature is not base64url")
        }
        return header
    }

    /// Checks type and algorithm, then the signature against one device key,
    /// and decodes the claims. Nothing in the token chooses the key or the
    /// algorithm: both are fixed by the caller.
    public static func verify<Claims: JWTPayload>(
        _ token: String,
        type: String,
        key: DevicePublicKey,
        as _: Claims.Type
    ) async throws(ProtocolError) -> Claims {
        let header = try Self.header(of: token)
        guard header.typ == type else {
            throw ProtocolError(.wrongType, "expected typ \(type), got \(header.typ ?? "none")")
        }
        guard header.alg == "ES256" else {
            throw ProtocolError(.wrongAlgorithm, "only ES256 is accepted, got \(header.alg ?? "none")")
        }
        let thumbprint = key.thumbprint
        guard header.kid == thumbprint else {
            throw ProtocolError(.wrongDevice, "the kid does not name this device's key")
        }
        let keys = try await verifier(for: key, thumbprint: thumbprint)
        do {
            return try await keys.verify(token, as: Claims.self)
        } catch let error as JWTError where error.errorType == .malformedToken {
            throw ProtocolError(.malformed, "the claims could not be read: \(error.reason ?? "\(error)")")
        } catch {
            // A failed check, or a signature that is not 64 bytes of r || s.
            throw ProtocolError(.badSignature, "the signature does not verify with the device key")
        }
    }

    /// The key collection that verifies `key`'s signatures, made once per
    /// process: making one validates the point on the curve, and a device
    /// key never changes (its thumbprint is its id).
    private static func verifier(for key: DevicePublicKey, thumbprint: String) async throws(ProtocolError)
        -> JWTKeyCollection
    {
        if let known = verifiers[thumbprint] { return known }
        let publicKey: ES256PublicKey
        do {
            publicKey = try ES256PublicKey(parameters: (key.x, key.y))
        } catch {
            throw ProtocolError(.invalidKey, "the device key cannot be used")
        }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: publicKey, kid: JWKIdentifier(string: thumbprint))
        verifiers.insert(keys, for: thumbprint)
        return keys
    }

    private static let verifiers = ProcessCache<String, JWTKeyCollection>()

    /// Signs claims with a device key; `kid` is the key's thumbprint.
    public static func sign(
        _ claims: some JWTPayload,
        type: String,
        key: P256.Signing.PrivateKey
    ) async throws -> String {
        let kid = DevicePublicKey(key.publicKey).thumbprint
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(backing: key), kid: JWKIdentifier(string: kid))
        return try await keys.sign(claims, kid: JWKIdentifier(string: kid), header: ["typ": .string(type)])
    }
}
