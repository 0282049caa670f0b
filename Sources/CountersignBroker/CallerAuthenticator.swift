import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird

extension HTTPField.Name {
    /// The API key id header of the original API.
    static let apiKeyID = Self("API_KEY_ID")!
    /// The API secret key header of the original API.
    static let apiSecretKey = Self("API_SECRET_KEY")!
    /// A device's proof JWT.
    static let deviceProof = Self("Device-Proof")!
    /// A proof by the key a pairing event asks to add.
    static let newDeviceProof = Self("New-Device-Proof")!
}

/// Establishes who is calling from the request's credentials, for
/// ``RequestLifecycleMiddleware`` to put in the context. Credentials that are
/// present but wrong end the request with 401; absent credentials leave the
/// identity empty for the route to judge.
struct CallerAuthenticator: Sendable {
    let environment: BrokerEnvironment

    func identify(_ request: Request) async throws -> CallerIdentity? {
        if let proof = request.headers[.deviceProof] {
            return try await device(proof: proof, request: request)
        }
        if let credentials = try APIKeyCredentials(headers: request.headers) {
            return try await apiKey(credentials)
        }
        if let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") {
            let secret = String(authorization.dropFirst("Bearer ".count)).trimmingCharacters(in: .whitespaces)
            guard !secret.isEmpty else { throw APIError.unauthorized("empty bearer token") }
            return .requester(secret: secret)
        }
        return nil
    }

    private func apiKey(_ credentials: APIKeyCredentials) async throws -> CallerIdentity {
        guard let key = try await environment.store.apiKey(id: credentials.id) else {
            throw APIError.unauthorized("unknown API key id")
        }
        guard let secret = credentials.secret else { return .app(key) }
        // The current secret, or one a rotation replaced, during its overlap.
        guard key.secret(SecretToken.digest(secret), at: environment.now()) != .refused else {
            throw APIError.unauthorized("wrong API secret key")
        }
        return .backend(key)
    }

    /// The device a valid proof comes from, with its app's key.
    ///
    /// In steps whose records stay out of this frame: the deepest frames of
    /// a device request are kept by its connection's task for as long as the
    /// connection lives (see docs/benchmarks.md).
    private func device(proof: String, request: Request) async throws -> CallerIdentity {
        let now = environment.now()
        // Parsed once: its kid names the device, then it is verified.
        let jws = try ProofCheck.parsed(proof)
        let enrolled = try await enrolledDevice(claimedIn: jws)
        try await ProofCheck(environment: environment).verify(
            jws, key: enrolled.device.publicKey, request: request, now: now)
        return try await identity(of: enrolled, now: now)
    }

    /// A device record, boxed.
    private final class Enrolled: Sendable {
        let device: TrustedDevice
        init(_ device: TrustedDevice) { self.device = device }

        /// Whether its last-seen time is more than a minute old.
        func seenLongAgo(_ now: Date) -> Bool {
            device.lastSeenAt.map { now.timeIntervalSince($0) > 60 } ?? true
        }
    }

    /// The enrolled, unrevoked device a proof names, not yet verified.
    ///
    /// The checks and their errors are out of line, so that this frame holds
    /// little more than the store's answer.
    @inline(never)
    private func enrolledDevice(claimedIn jws: CompactJWS.Parsed) async throws -> Enrolled {
        try Self.unrevoked(await environment.store.device(id: try Self.deviceID(claimedIn: jws)))
    }

    @inline(never)
    private static func deviceID(claimedIn jws: CompactJWS.Parsed) throws -> String {
        do {
            return try DeviceProof.deviceID(in: jws)
        } catch {
            throw APIError(.unauthorized, "invalid_proof", error.message)
        }
    }

    @inline(never)
    private static func unrevoked(_ device: TrustedDevice?) throws -> Enrolled {
        guard let device else {
            throw APIError(.unauthorized, "unknown_device", "no device with this key is enrolled")
        }
        guard device.revokedAt == nil else { throw APIError.deviceRevoked }
        return Enrolled(device)
    }

    /// The identity of a device whose proof verified, seen now.
    @inline(never)
    private func identity(of enrolled: Enrolled, now: Date) async throws -> CallerIdentity {
        let key = try Self.existing(await environment.store.apiKey(id: enrolled.device.issuer))
        if enrolled.seenLongAgo(now) {
            try await environment.store.markDeviceSeen(id: enrolled.device.id, now: now)
        }
        return .device(AuthenticatedDevice(enrolled.device, key))
    }

    @inline(never)
    private static func existing(_ key: APIKey?) throws -> APIKey {
        guard let key else { throw APIError(.unauthorized, "unknown_device", "the device's app no longer exists") }
        return key
    }
}

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
            throw APIError(.unauthorized, "invalid_proof", error.message)
        }
    }

    /// A proof split and decoded, or the 401 for a malformed one.
    @inline(never)
    static func parsed(_ proof: String) throws -> CompactJWS.Parsed {
        do {
            return try CompactJWS.Parsed(proof)
        } catch {
            throw APIError(.unauthorized, "invalid_proof", error.message)
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
            throw APIError(.unauthorized, "replayed_proof", "this proof was used before; sign a new one per request")
        }
    }
}

/// API key credentials from `API_KEY_ID`/`API_SECRET_KEY` or HTTP Basic.
struct APIKeyCredentials: Equatable {
    var id: String
    var secret: String?

    /// nil when the request carries no API key at all.
    init?(headers: HTTPFields) throws {
        if let authorization = headers[.authorization], authorization.lowercased().hasPrefix("basic ") {
            let encoded = authorization.dropFirst("basic ".count).trimmingCharacters(in: .whitespaces)
            guard let data = Data(base64Encoded: encoded), let text = String(data: data, encoding: .utf8),
                let colon = text.firstIndex(of: ":")
            else {
                throw APIError.unauthorized("Basic credentials must be base64 of id:secret")
            }
            id = String(text[..<colon])
            secret = String(text[text.index(after: colon)...])
        } else if let keyID = headers[.apiKeyID] {
            id = keyID
            secret = headers[.apiSecretKey]
        } else {
            return nil
        }
        guard !id.isEmpty else { throw APIError.unauthorized("empty API key id") }
        if secret?.isEmpty == true { secret = nil }
    }
}
