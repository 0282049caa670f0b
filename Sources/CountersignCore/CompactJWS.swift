public import Crypto
import Foundation
public import JWTKit

/// Parsing, signing and verification of compact ES256 JWS values, on top of
/// jwt-kit, with the strict header checks every Countersign object needs.
public enum CompactJWS {
    /// Reads the protected header without verifying anything: jwt-kit's
    /// header, of which Countersign reads `alg`, `typ` (what kind of object
    /// the JWS is) and `kid` (a device id or a broker signing-key id).
    public static func header(of token: String) throws(ProtocolError) -> JWTHeader {
        try Parsed(token).header
    }

    /// A compact JWS split and decoded once: what the header says, the
    /// signed bytes, the payload and the signature. The broker parses a
    /// proof once, reads its kid to find the device, then verifies it.
    package struct Parsed: Sendable {
        package let header: JWTHeader
        /// `BASE64URL(header) "." BASE64URL(payload)`, as received.
        let signingInput: [UInt8]
        let payload: Data
        let signature: Data

        package init(_ token: String) throws(ProtocolError) {
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else {
                throw ProtocolError(.malformed, "expected a compact JWS with three non-empty parts")
            }
            guard let headerData = Base64URL.decode(parts[0]),
                let header = try? JSONDecoder().decode(JWTHeader.self, from: headerData)
            else {
                throw ProtocolError(.malformed, "the JWS header is not base64url-encoded JSON")
            }
            guard let payload = Base64URL.decode(parts[1]), let signature = Base64URL.decode(parts[2]) else {
                throw ProtocolError(.malformed, "the JWS payload or signature is not base64url")
            }
            self.header = header
            self.signingInput = Array(token[parts[0].startIndex..<parts[1].endIndex].utf8)
            self.payload = payload
            self.signature = signature
        }

        /// Type, algorithm and key id as the verifier expects them.
        func check(type: String, kid: String) throws(ProtocolError) {
            guard header.typ == type else {
                throw ProtocolError(.wrongType, "expected typ \(type), got \(header.typ ?? "none")")
            }
            guard header.alg == "ES256" else {
                throw ProtocolError(.wrongAlgorithm, "only ES256 is accepted, got \(header.alg ?? "none")")
            }
            guard header.kid == kid else {
                throw ProtocolError(.wrongDevice, "the kid does not name this device's key")
            }
        }

        /// The claims, once the signature verifies.
        func claims<Claims: JWTPayload>(_: Claims.Type, verifiedBy algorithm: any JWTAlgorithm) throws(ProtocolError)
            -> Claims
        {
            // A failed check, or a signature that is not 64 bytes of r || s.
            guard (try? algorithm.verify(signature, signs: signingInput)) == true else {
                throw ProtocolError(.badSignature, "the signature does not verify with the device key")
            }
            do {
                return try CompactJWS.claimsDecoder.decode(Claims.self, from: payload)
            } catch {
                throw ProtocolError(.malformed, "the claims could not be read: \(error)")
            }
        }
    }

    /// Checks type and algorithm, then the signature against one device key,
    /// and decodes the claims. Nothing in the token chooses the key or the
    /// algorithm: both are fixed by the caller.
    ///
    /// The token is parsed once, here; the signature is checked by jwt-kit's
    /// ES256 algorithm for the key, made once per key.
    public static func verify<Claims: JWTPayload>(
        _ token: String,
        type: String,
        key: DevicePublicKey,
        as claims: Claims.Type
    ) async throws(ProtocolError) -> Claims {
        try await verify(Parsed(token), type: type, key: key, as: claims)
    }

    /// ``verify(_:type:key:as:)`` of a token already parsed.
    package static func verify<Claims: JWTPayload>(
        _ jws: Parsed,
        type: String,
        key: DevicePublicKey,
        as _: Claims.Type
    ) async throws(ProtocolError) -> Claims {
        let thumbprint = key.thumbprint
        try jws.check(type: type, kid: thumbprint)
        let algorithm = try await verifier(for: key, thumbprint: thumbprint)
        let claims = try jws.claims(Claims.self, verifiedBy: algorithm)
        do {
            try await claims.verify(using: algorithm)
        } catch {
            throw ProtocolError(.malformed, "the claims do not hold: \(error)")
        }
        return claims
    }

    /// jwt-kit's decoder for claims (NumericDate as seconds).
    static let claimsDecoder: any JWTJSONDecoder = .defaultForJWT

    /// jwt-kit's ES256 algorithm for `key`, made once per process: making
    /// one validates the point on the curve, and a device key never changes
    /// (its thumbprint is its id).
    private static func verifier(for key: DevicePublicKey, thumbprint: String) async throws(ProtocolError)
        -> any JWTAlgorithm
    {
        if let known = verifiers[thumbprint] { return known }
        let algorithm: any JWTAlgorithm
        do {
            let keys = JWTKeyCollection()
            let kid = JWKIdentifier(string: thumbprint)
            await keys.add(ecdsa: try ES256PublicKey(parameters: (key.x, key.y)), kid: kid)
            algorithm = try await keys.getKey(for: kid, alg: "ES256")
        } catch {
            throw ProtocolError(.invalidKey, "the device key cannot be used")
        }
        verifiers.insert(algorithm, for: thumbprint)
        return algorithm
    }

    private static let verifiers = ProcessCache<String, any JWTAlgorithm>()

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
