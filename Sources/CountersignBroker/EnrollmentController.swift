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

    /// The route a new device calls; it has no identity yet.
    var deviceEndpoints: RouteCollection<BrokerRequestContext> {
        RouteCollection(context: BrokerRequestContext.self)
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

    @Sendable func enroll(_ request: Request, context: BrokerRequestContext) async throws -> JSONBody<DeviceDocument> {
        guard let credentials = try APIKeyCredentials(headers: request.headers),
            let key = try await environment.store.apiKey(id: credentials.id)
        else {
            throw APIError.unauthorized("send the app's API key id in API_KEY_ID")
        }
        let body = try await request.decodeJSON(EnrollRequest.self, context: context)
        let name = try DeviceName.validate(body.name)
        let type = try DeviceName.validate(body.type ?? "cli", field: "type")
        guard let proof = request.headers[.deviceProof] else {
            throw APIError.unauthorized("sign a Device-Proof with the new key to show you hold it")
        }
        let now = environment.now()
        try await ProofCheck(environment: environment).verify(proof, key: body.publicKey, request: request, now: now)
        func device(for user: String) -> TrustedDevice {
            TrustedDevice(
                publicKey: body.publicKey, issuer: key.id, clientUserID: user, name: name, type: type, createdAt: now,
                lastSeenAt: now)
        }
        let enrolled: TrustedDevice
        do {
            switch (body.enrollmentToken, body.verification, body.recoveryCode) {
            case (let token?, nil, nil):
                guard let user = body.clientUserID, ClientUserID.isValid(user) else {
                    throw APIError.badRequest("client_user_id is missing or invalid")
                }
                enrolled = device(for: user)
                do {
                    try await environment.store.enrollDevice(
                        enrolled, consumingToken: SecretToken.digest(token),
                        author: ChangeAuthor(actor: ChangeAuthor.enrollmentToken, ip: context.clientAddress), now: now)
                } catch let error as StoreError where error.code == .notFound {
                    throw APIError(
                        .forbidden, "invalid_enrollment_token",
                        "the enrollment token is unknown, used, expired or for another user")
                }
            case (nil, let grant?, nil):
                enrolled = try await enrollVerified(
                    grant, body: body, key: key, ip: context.clientAddress, device: device(for:))
            case (nil, nil, let code?):
                guard let user = body.clientUserID, ClientUserID.isValid(user) else {
                    throw APIError.badRequest("client_user_id is missing or invalid")
                }
                enrolled = device(for: user)
                let refused = APIError(
                    .forbidden, "invalid_recovery_code", "the recovery code is unknown, used, or for another user")
                guard let digest = RecoveryCode.digest(code) else { throw refused }
                do {
                    try await environment.store.enrollDevice(
                        enrolled, consumingRecoveryCode: digest,
                        author: ChangeAuthor(actor: ChangeAuthor.recoveryCode, ip: context.clientAddress), now: now)
                } catch let error as StoreError where error.code == .notFound {
                    throw refused
                }
            default:
                throw APIError.badRequest("send one of enrollment_token, verification or recovery_code")
            }
        } catch let error as StoreError where error.code == .alreadyExists {
            throw APIError.conflict("device_exists", "this key is enrolled already")
        }
        return JSONBody(DeviceDocument(enrolled), status: .created)
    }

    /// A first device for a user who just verified an email address or phone
    /// number; the verified identifier is the user id.
    private func enrollVerified(
        _ grant: VerifiedCode, body: EnrollRequest, key: APIKey, ip: String, device: (String) -> TrustedDevice
    ) async throws -> TrustedDevice {
        let redeemed: VerificationChallenge
        do {
            redeemed = try await CodeRedemption(environment: environment).redeem(grant, apiKeyID: key.id)
        } catch let failure as CodeRedemption.Failure {
            throw APIError(
                .forbidden, "invalid_verification",
                failure == .expiredOrUsed
                    ? "the authorization code is unknown, expired or already used"
                    : "the verification does not match (challenge, redirect URL or code verifier)")
        }
        if let user = body.clientUserID, user != redeemed.identifier {
            throw APIError.badRequest("client_user_id must be the verified identifier, \(redeemed.identifier)")
        }
        let enrolled = device(redeemed.identifier)
        do {
            try await environment.store.enrollFirstDevice(
                enrolled, author: ChangeAuthor(actor: ChangeAuthor.verifiedIdentifier, ip: ip), now: environment.now())
        } catch let error as StoreError where error.code == .conflict {
            throw APIError.conflict(
                "has_trusted_device", "this user already has a trusted device; a new one must be approved from it")
        }
        return enrolled
    }
}

/// Validation of names people give devices.
enum DeviceName {
    static func validate(_ text: String, field: String = "name") throws -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, trimmed.count <= 128,
            trimmed.unicodeScalars.allSatisfy({ !CharacterSet.controlCharacters.contains($0) })
        else {
            throw APIError.badRequest("\(field) must be 1 to 128 printable characters")
        }
        return trimmed
    }
}

extension Parameters {
    /// The `:user` path parameter, validated.
    func userID() throws -> String {
        guard let user = self.get("user")?.removingPercentEncoding, ClientUserID.isValid(user) else {
            throw APIError.badRequest("invalid client_user_id in the path")
        }
        return user
    }
}
