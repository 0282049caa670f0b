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
    /// Which credentials the route group takes.
    var accepts = Credentials.any

    enum Credentials: Sendable {
        /// A device proof, an API key (headers or Basic), or a requester's
        /// bearer token.
        case any
        /// An API key only. Where a new key proves it holds itself
        /// (enrollment), the route checks that proof, and the caller is the
        /// app its API key id names.
        case apiKey
        /// An OAuth client: an API key by Basic, or by `client_id` (and
        /// `client_secret`) in the form body, one method at a time.
        case oauthClient
        /// A decision in the body, by the device its key id names.
        case decision
        /// The console's session cookie (``ConsoleAccess``).
        case console
    }

    /// The caller. For a decision or an OAuth client the body is read
    /// here, once: the identity carries what the route needs of it.
    func identify(_ request: Request, context: BrokerRequestContext) async throws -> CallerIdentity? {
        switch accepts {
        case .any:
            if let proof = request.headers[.deviceProof] {
                return try await device(proof: proof, request: request)
            }
        case .apiKey:
            break
        case .oauthClient:
            return try await oauthClient(request, context: context)
        case .decision:
            return try await decider(request, context: context)
        case .console:
            return .consoleOperator(
                try await ConsoleAccess(environment: environment).signedIn(request, address: context.clientAddress))
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

    /// The device a decision's key id names, with the decision parsed
    /// once. Its signature is checked by the route, against the event.
    ///
    /// Out of line, as the OAuth client's: a held poll's connection keeps
    /// the deepest frames it ever had (see docs/benchmarks.md), and the
    /// common path's frame should not grow by these.
    @inline(never)
    private func decider(_ request: Request, context: some RequestContext) async throws -> CallerIdentity {
        let body = try await request.decodeJSON(Decider.Body.self, context: context)
        let jws = try CompactJWS.Parsed(body.decision)
        guard let device = try await environment.store.device(id: try DeviceProof.deviceID(in: jws)) else {
            throw APIError.forbidden(.unknownDevice, "no device with this key is enrolled")
        }
        return .decider(Decider(device: device, decision: jws, text: body.decision, assertion: body.assertion))
    }

    /// The client fields of an OAuth form (RFC 6749 §2.3).
    private struct ClientFields: Decodable {
        var clientID: String?
        var clientSecret: String?

        enum CodingKeys: String, CodingKey {
            case clientID = "client_id"
            case clientSecret = "client_secret"
        }
    }

    /// RFC 6749 §2.3.1: `client_secret_basic`, `client_secret_post`, or a
    /// public client's `client_id` alone.
    @inline(never)
    private func oauthClient(_ request: Request, context: some RequestContext) async throws -> CallerIdentity {
        let body = try await request.formBody(context: context)
        let form = try Request.decodeForm(ClientFields.self, from: body)
        let credentials: APIKeyCredentials
        if let basic = try APIKeyCredentials(basic: request.headers[.authorization]) {
            guard form.clientSecret == nil else {
                throw APIError.oauth(
                    .invalidRequest, "authenticate with one method: Basic or client_secret, not both")
            }
            guard form.clientID == nil || form.clientID == basic.id else {
                throw APIError.oauth(.invalidClient, "client_id differs from the authenticated client")
            }
            credentials = basic
        } else {
            credentials = APIKeyCredentials(id: form.clientID ?? "", secret: form.clientSecret)
        }
        guard !credentials.id.isEmpty else { throw APIError.oauth(.invalidClient, "client_id is missing") }
        switch try await apiKey(credentials) {
        case .backend(let key): return .oauthClient(OAuthClient(key: key, authenticated: true, form: body))
        case .app(let key): return .oauthClient(OAuthClient(key: key, authenticated: false, form: body))
        default: throw APIError.oauth(.invalidClient, "client_id is missing or unknown")
        }
    }

    private func apiKey(_ credentials: APIKeyCredentials) async throws -> CallerIdentity {
        guard let key = try await environment.store.apiKey(id: credentials.id), key.revokedAt == nil else {
            throw APIError.unauthorized("unknown API key id")
        }
        guard let secret = credentials.secret else { return .app(key) }
        if let refusal = ConsoleApp.refusal(of: .secret, apiKeyID: key.id) { throw APIError.unauthorized(refusal) }
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

    /// A device record and its app's key (nil once revoked), boxed.
    private final class Enrolled: Sendable {
        let device: TrustedDevice
        let apiKey: APIKey?
        init(_ device: TrustedDevice, _ apiKey: APIKey?) {
            self.device = device
            self.apiKey = apiKey
        }

        /// Whether its last-seen time is more than a minute old.
        func seenLongAgo(_ now: Date) -> Bool {
            device.lastSeenAt.map { now.timeIntervalSince($0) > 60 } ?? true
        }
    }

    /// The enrolled, unrevoked device a proof names, not yet verified,
    /// read with its app's key.
    ///
    /// The checks and their errors are out of line, so that this frame holds
    /// little more than the store's answer.
    @inline(never)
    private func enrolledDevice(claimedIn jws: CompactJWS.Parsed) async throws -> Enrolled {
        try Self.unrevoked(await environment.store.deviceWithAPIKey(id: try Self.deviceID(claimedIn: jws)))
    }

    @inline(never)
    private static func deviceID(claimedIn jws: CompactJWS.Parsed) throws -> String {
        do {
            return try DeviceProof.deviceID(in: jws)
        } catch {
            throw APIError(.unauthorized, .invalidProof, error.message)
        }
    }

    @inline(never)
    private static func unrevoked(_ found: (TrustedDevice, APIKey?)?) throws -> Enrolled {
        guard let (device, key) = found else {
            throw APIError(.unauthorized, .unknownDevice, "no device with this key is enrolled")
        }
        guard device.revokedAt == nil else { throw APIError.deviceRevoked }
        return Enrolled(device, key)
    }

    /// The identity of a device whose proof verified, seen now.
    @inline(never)
    private func identity(of enrolled: Enrolled, now: Date) async throws -> CallerIdentity {
        let key = try Self.existing(enrolled.apiKey)
        if enrolled.seenLongAgo(now) {
            try await environment.store.markDeviceSeen(id: enrolled.device.id, now: now)
        }
        return .device(AuthenticatedDevice(enrolled.device, key))
    }

    @inline(never)
    private static func existing(_ key: APIKey?) throws -> APIKey {
        guard let key else { throw APIError(.unauthorized, .unknownDevice, "the device's app no longer exists") }
        return key
    }
}
