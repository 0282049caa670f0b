import CountersignCore
import CountersignStore
import Foundation
import Hummingbird

/// Enrollment of a user's first device: the app backend asks for a one-time
/// token, the device presents it with its new public key and a proof that
/// it holds the private key.
struct EnrollmentController {
    let environment: BrokerEnvironment

    /// Routes that need the app's secret key.
    var backendEndpoints: RouteCollection<BackendRequestContext> {
        RouteCollection(context: BackendRequestContext.self)
            .post("users/:user/enrollment-tokens", use: createToken)
    }

    /// The route a new device calls: it has no identity yet, only its
    /// app's API key id.
    var deviceEndpoints: RouteCollection<AppRequestContext> {
        RouteCollection(context: AppRequestContext.self)
            .post("enrollments", use: enroll)
    }

    struct TokenResponse: Encodable, Sendable {
        let token: String
        let clientUserID: String
        let expiresAt: Date
        enum CodingKeys: String, CodingKey {
            case token
            case clientUserID = "client_user_id"
            case expiresAt = "expires_at"
        }
    }

    @Sendable func createToken(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<
        TokenResponse
    > {
        let user = try context.parameters.userID()
        try await request.requireObjectIfBody(context: context)
        try await environment.requireEnabled(user)
        let now = environment.now()
        // Prefixed: a token starting with "-" would read as an option on a command line.
        let token = "et_" + SecretToken.generate(bytes: 32)
        let record = EnrollmentToken(
            digest: SecretToken.digest(token), issuer: context.apiKey.id, clientUserID: user, createdAt: now,
            expiresAt: now + environment.policy.enrollmentTokenLifetime)
        try await environment.store.insertEnrollmentToken(record)
        return JSONBody(TokenResponse(token: token, clientUserID: user, expiresAt: record.expiresAt), status: .created)
    }

    struct EnrollRequest: Decodable {
        let clientUserID: String?
        let enrollmentToken: String?
        /// The hosted page's authorization code, instead of a token.
        let verification: VerifiedCode?
        /// One of the user's recovery codes, instead of a token.
        let recoveryCode: String?
        let publicKey: DevicePublicKey
        let name: String
        let type: String?
        enum CodingKeys: String, CodingKey {
            case name, type, verification
            case clientUserID = "client_user_id"
            case enrollmentToken = "enrollment_token"
            case recoveryCode = "recovery_code"
            case publicKey = "public_key"
        }
    }

    /// What an enrollment request asks for, read and checked.
    private struct Enrollment: Sendable {
        let key: APIKey
        let body: EnrollRequest
        let name: String
        let type: String
        let proof: String
        let now: Date
        let ip: String

        /// Checks the names and that a proof came, in that order.
        init(key: APIKey, body: EnrollRequest, headers: HTTPFields, now: Date, ip: String) throws {
            self.key = key
            self.body = body
            self.name = try DisplayText.Field.deviceName.require(body.name)
            self.type = try DisplayText.Field.deviceType.require(body.type ?? "cli")
            guard let proof = headers[.deviceProof] else {
                throw APIError.unauthorized("sign a Device-Proof with the new key to show you hold it")
            }
            self.proof = proof
            self.now = now
            self.ip = ip
        }

        func device(for user: String) -> TrustedDevice {
            TrustedDevice(
                publicKey: body.publicKey, issuer: key.id, clientUserID: user, name: name, type: type, createdAt: now,
                lastSeenAt: now)
        }

        /// The user a token or recovery code enrolls for, as the body names it.
        func namedUser() throws -> String {
            guard let user = body.clientUserID, ClientUserID.isValid(user) else {
                throw APIError.badRequest("client_user_id is missing or invalid")
            }
            return user
        }
    }

    /// Like every request but a GET, it runs in a child task of its
    /// connection's, whose frames go when it ends: its depth costs nothing
    /// to a long-poll the device may go on to hold on the same connection
    /// (see docs/benchmarks.md).
    ///
    /// A refused enrollment writes nothing: the proof is checked first,
    /// then the credential is spent in the write that enrolls the key, and
    /// only then the proof's id (a replay of it finds the key enrolled).
    @Sendable func enroll(_ request: Request, context: AppRequestContext) async throws -> JSONBody<DeviceDocument> {
        let enrollment = try await read(request, context: context)
        let check = ProofCheck(environment: environment)
        let claims = try await check.possession(
            enrollment.proof, key: enrollment.body.publicKey, request: request, now: enrollment.now)
        let device = try await register(enrollment)
        try await check.spend(claims, of: enrollment.body.publicKey, now: enrollment.now)
        return JSONBody(DeviceDocument(device), status: .created)
    }

    private func read(_ request: Request, context: AppRequestContext) async throws -> Enrollment {
        try Enrollment(
            key: context.apiKey, body: try await request.decodeJSON(EnrollRequest.self, context: context),
            headers: request.headers, now: environment.now(), ip: context.clientAddress)
    }

    /// The device, enrolled by the one credential the body carries.
    private func register(_ enrollment: Enrollment) async throws -> TrustedDevice {
        do {
            switch try Credential(enrollment.body) {
            case .token(let token): return try await enrollWithToken(token, enrollment)
            case .verification(let grant): return try await enrollWithVerification(grant, enrollment)
            case .recoveryCode(let code): return try await enrollWithRecoveryCode(code, enrollment)
            }
        } catch let error as StoreError where error.code == .alreadyExists {
            throw APIError.conflict(.deviceExists, "this key is enrolled already")
        }
    }

    /// An operator's devices are enrolled with a token from the host only.
    private static func refuseAtConsole(_ key: APIKey) throws {
        if let refusal = ConsoleApp.refusal(of: .enrollWithoutToken, apiKeyID: key.id) {
            throw APIError.forbidden(.consoleApp, refusal)
        }
    }

    /// What vouches for a new device: exactly one of them.
    private enum Credential {
        case token(String)
        indirect case verification(VerifiedCode)
        case recoveryCode(String)

        init(_ body: EnrollRequest) throws {
            switch (body.enrollmentToken, body.verification, body.recoveryCode) {
            case (let token?, nil, nil): self = .token(token)
            case (nil, let grant?, nil): self = .verification(grant)
            case (nil, nil, let code?): self = .recoveryCode(code)
            default: throw APIError.badRequest("send one of enrollment_token, verification or recovery_code")
            }
        }
    }

    private func enrollWithToken(_ token: String, _ enrollment: Enrollment) async throws -> TrustedDevice {
        let enrolled = enrollment.device(for: try enrollment.namedUser())
        try await environment.requireEnabled(enrolled.clientUserID)
        do {
            try await environment.store.enrollDevice(
                enrolled, consumingToken: SecretToken.digest(token),
                author: ChangeAuthor(actor: ChangeAuthor.enrollmentToken, ip: enrollment.ip), now: enrollment.now)
        } catch let error as StoreError where error.code == .notFound {
            throw APIError(
                .forbidden, .invalidEnrollmentToken,
                "the enrollment token is unknown, used, expired or for another user")
        }
        return enrolled
    }

    private func enrollWithRecoveryCode(_ code: String, _ enrollment: Enrollment) async throws -> TrustedDevice {
        try Self.refuseAtConsole(enrollment.key)
        let enrolled = enrollment.device(for: try enrollment.namedUser())
        try await environment.requireEnabled(enrolled.clientUserID)
        let refused = APIError(
            .forbidden, .invalidRecoveryCode, "the recovery code is unknown, used, or for another user")
        guard let digest = RecoveryCode.digest(code) else { throw refused }
        do {
            try await environment.store.enrollDevice(
                enrolled, consumingRecoveryCode: digest,
                author: ChangeAuthor(actor: ChangeAuthor.recoveryCode, ip: enrollment.ip), now: enrollment.now)
        } catch let error as StoreError where error.code == .notFound {
            throw refused
        }
        return enrolled
    }

    /// A first device for a user who just verified an email address or phone
    /// number; the verified identifier is the user id.
    private func enrollWithVerification(_ grant: VerifiedCode, _ enrollment: Enrollment) async throws
        -> TrustedDevice
    {
        try Self.refuseAtConsole(enrollment.key)
        let redeemed: VerificationChallenge
        do {
            redeemed = try await CodeRedemption(environment: environment).redeem(grant, apiKeyID: enrollment.key.id)
        } catch let failure as CodeRedemption.Failure {
            throw APIError(.forbidden, .invalidVerification, failure.explanation)
        }
        if let user = enrollment.body.clientUserID, user != redeemed.identifier {
            throw APIError.badRequest("client_user_id must be the verified identifier, \(redeemed.identifier)")
        }
        let enrolled = enrollment.device(for: redeemed.identifier)
        try await environment.requireEnabled(enrolled.clientUserID)
        do {
            try await environment.store.enrollFirstDevice(
                enrolled, author: ChangeAuthor(actor: ChangeAuthor.verifiedIdentifier, ip: enrollment.ip),
                now: environment.now())
        } catch let error as StoreError where error.code == .conflict {
            throw APIError.conflict(
                .hasTrustedDevice, "this user already has a trusted device; a new one must be approved from it")
        }
        return enrolled
    }
}
