import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird

/// Checks a device proof for this request and spends its `jti`.
struct ProofCheck {
    let environment: BrokerEnvironment

    func verify(_ proof: String, key: DevicePublicKey, request: Request, now: Date) async throws {
        try await verify(Self.parsed(proof), key: key, request: request, now: now)
    }

    func verify(_ jws: CompactJWS.Parsed, key: DevicePublicKey, request: Request, now: Date) async throws {
        let claims = try await verifiedClaims(of: jws, key: key, request: request, now: now)
        try await spend(claims, of: key, now: now)
    }

    /// A new key's proof of possession (enrollment, pairing), checked
    /// without a write: a stranger's refused request must cost the store
    /// nothing. The caller spends it (``spend(_:of:now:)``) once the write
    /// it allows has been made.
    func possession(_ proof: String, key: DevicePublicKey, request: Request, now: Date) async throws
        -> DeviceProofClaims
    {
        try await verifiedClaims(of: Self.parsed(proof), key: key, request: request, now: now)
    }

    /// The proof's claims, once its signature and its binding to this
    /// request (method, path, origin, age) check out.
    @inline(never)
    private func verifiedClaims(of jws: CompactJWS.Parsed, key: DevicePublicKey, request: Request, now: Date)
        async throws
        -> DeviceProofClaims
    {
        do {
            return try await DeviceProof.verify(
                jws, key: key, method: request.method.rawValue, path: request.uri.path,
                acceptedOrigins: environment.origins, now: now, leeway: environment.policy.proofLeeway)
        } catch {
            throw APIError(.unauthorized, .invalidProof, error.message)
        }
    }

    /// A proof split and decoded, or the 401 for a malformed one.
    @inline(never)
    static func parsed(_ proof: String) throws -> CompactJWS.Parsed {
        do {
            return try CompactJWS.Parsed(proof)
        } catch {
            throw APIError(.unauthorized, .invalidProof, error.message)
        }
    }

    /// Records the proof's `jti` as used; a second use is a replay.
    @inline(never)
    func spend(_ claims: DeviceProofClaims, of key: DevicePublicKey, now: Date) async throws {
        do {
            // Kept past the leeway on both sides, after which iat alone refuses it.
            try await environment.store.consumeProofID(
                "proof:" + claims.jti, deviceID: key.thumbprint,
                expiresAt: Date(timeIntervalSince1970: TimeInterval(claims.iat)) + environment.policy.proofLeeway * 2,
                now: now)
        } catch let error as StoreError where error.code == .replayed {
            throw APIError(.unauthorized, .replayedProof, "this proof was used before; sign a new one per request")
        }
    }
}
