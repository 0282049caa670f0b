public import Crypto
public import Foundation
public import JWTKit

/// Claims of a device proof: an RFC 9449 (DPoP)-shaped JWT that a device
/// sends with each request it authenticates, naming the request it is for.
public struct DeviceProofClaims: JWTPayload, Equatable {
    /// A unique id; the broker accepts each one once per device.
    public var jti: String
    /// The HTTP method of the request.
    public var htm: String
    /// The request URL without query and fragment.
    public var htu: String
    /// Issued-at, seconds since 1970.
    public var iat: Int

    /// Creates claims for one request.
    public init(jti: String, htm: String, htu: String, iat: Int) {
        self.jti = jti
        self.htm = htm
        self.htu = htu
        self.iat = iat
    }

    public func verify(using _: some JWTAlgorithm) async throws {}
}

/// Making and checking device proofs. The exact format is in
/// proto/signing.md.
public enum DeviceProof {
    /// The JOSE `typ` of a device proof.
    public static let type = "countersign-proof+jwt"

    /// Signs a proof for one request. `url` may carry a query; it is dropped.
    public static func make(
        key: P256.Signing.PrivateKey, method: String, url: String, now: Date
    ) async throws -> String {
        let claims = DeviceProofClaims(
            jti: SecretToken.generate(bytes: 16), htm: method.uppercased(), htu: htu(of: url),
            iat: Int(now.timeIntervalSince1970))
        return try await CompactJWS.sign(claims, type: type, key: key)
    }

    /// The device id a proof claims to come from (its `kid`), unverified.
    public static func deviceID(in token: String) throws(ProtocolError) -> String {
        try deviceID(in: CompactJWS.Parsed(token))
    }

    /// ``deviceID(in:)`` of a token already parsed.
    package static func deviceID(in jws: CompactJWS.Parsed) throws(ProtocolError) -> String {
        guard let kid = jws.header.kid, !kid.isEmpty else {
            throw ProtocolError(.malformed, "the proof has no kid")
        }
        return kid
    }

    /// Verifies a proof for a request: signature by `key`, method, path and
    /// origin, and `iat` within `leeway` seconds of `now`. Replay of the
    /// `jti` is the caller's to check, since it needs shared storage.
    public static func verify(
        _ token: String,
        key: DevicePublicKey,
        method: String,
        path: String,
        acceptedOrigins: Set<Origin>,
        now: Date,
        leeway: TimeInterval
    ) async throws(ProtocolError) -> DeviceProofClaims {
        try await verify(
            CompactJWS.Parsed(token), key: key, method: method, path: path, acceptedOrigins: acceptedOrigins, now: now,
            leeway: leeway)
    }

    /// ``verify(_:key:method:path:acceptedOrigins:now:leeway:)`` of a proof already parsed.
    package static func verify(
        _ jws: CompactJWS.Parsed,
        key: DevicePublicKey,
        method: String,
        path: String,
        acceptedOrigins: Set<Origin>,
        now: Date,
        leeway: TimeInterval
    ) async throws(ProtocolError) -> DeviceProofClaims {
        let claims = try await CompactJWS.verify(jws, type: type, key: key, as: DeviceProofClaims.self)
        try check(claims, method: method, path: path, acceptedOrigins: acceptedOrigins, now: now, leeway: leeway)
        return claims
    }

    /// The checks after the signature. Synchronous and out of line: in the
    /// async function their temporaries (a URLComponents among them) would
    /// widen a frame that every device request's task keeps.
    @inline(never)
    static func check(
        _ claims: DeviceProofClaims, method: String, path: String, acceptedOrigins: Set<Origin>, now: Date,
        leeway: TimeInterval
    ) throws(ProtocolError) {
        guard claims.htm == method.uppercased() else {
            throw ProtocolError(.wrongMethod, "the proof is for \(claims.htm), not \(method)")
        }
        guard let components = URLComponents(string: claims.htu), components.query == nil,
            components.percentEncodedPath == path
        else {
            throw ProtocolError(.wrongURL, "the proof is for another path than \(path)")
        }
        guard let origin = Origin(url: claims.htu), acceptedOrigins.contains(origin) else {
            throw ProtocolError(.wrongURL, "the proof names an origin this broker does not answer on")
        }
        try Freshness.check(jti: claims.jti, iat: claims.iat, now: now, leeway: leeway, signed: "proof")
    }

    /// `url` without query and fragment.
    public static func htu(of url: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.query = nil
        components.fragment = nil
        return components.string ?? url
    }
}
