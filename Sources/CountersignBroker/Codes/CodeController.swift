import CountersignCore
import CountersignOTP
import CountersignStore
import Foundation
import Hummingbird

/// TOTP codes and recovery codes.
struct CodeController {
    let environment: BrokerEnvironment

    /// Routes a trusted device calls.
    var deviceEndpoints: RouteCollection<DeviceRequestContext> {
        RouteCollection(context: DeviceRequestContext.self)
            .post("devices/self/totp", use: createSecret)
            .post("recovery-codes", use: createRecoveryCodes)
            .get("recovery-codes", use: recoveryCodeStatus)
    }

    /// Routes the app backend calls.
    var backendEndpoints: RouteCollection<BackendRequestContext> {
        RouteCollection(context: BackendRequestContext.self)
            .post("users/:user/totp/verify", use: verify)
    }

    /// Routes of an event's requester (or the backend).
    var eventEndpoints: RouteCollection<EventHolderContext> {
        RouteCollection(context: EventHolderContext.self)
            .post("events/:id/code", use: submit)
    }

    struct CodeRequest: Decodable { let code: String }

    /// The device's TOTP secret, made and shown once.
    @Sendable func createSecret(_ request: Request, context: DeviceRequestContext) async throws -> JSONBody<
        TOTPSecretDocument
    > {
        guard let vault = environment.vault else { throw CodeCheck.unavailable }
        let secret = TOTPSecret.generate()
        do {
            try await environment.store.setTOTPSecret(
                try vault.seal(secret, deviceID: context.device.id), deviceID: context.device.id)
        } catch let error as StoreError where error.code == .conflict {
            throw APIError.conflict(.totpExists, "this device has its TOTP secret already; it is shown only once")
        }
        let uri = secret.authenticatorURI(app: context.apiKey.name, user: context.device.clientUserID)
        return JSONBody(
            TOTPSecretDocument(
                secret: secret, otpauthURI: uri, digits: TOTPParameters.digits, period: TOTPParameters.period,
                algorithm: "SHA1"),
            status: .created)
    }

    /// A code settles nothing that requires user verification, and the
    /// code is not spent: only a passkey assertion approves such a login.
    static let needsPasskey = APIError(
        .forbidden, .userVerificationRequired,
        "this login requires user verification: only a trusted device's passkey approves it, not a code")

    /// A requester finishes its pending LOGIN with a code.
    @Sendable func submit(_ request: Request, context: EventHolderContext) async throws -> JSONBody<EventDocument> {
        let id = try context.parameters.require("id")
        let body = try await request.decodeJSON(CodeRequest.self, context: context)
        let event = try await EventController.event(id, heldBy: context.holder, in: environment)
        switch CodeFinishRule.refusal(for: event) {
        case .notALogin:
            throw APIError.badRequest(
                "only a LOGIN can be finished with a code; \(event.name) needs a trusted device's decision",
                code: .codeNotAccepted)
        case .userVerificationRequired: throw Self.needsPasskey
        case nil: break
        }
        let match = try await CodeCheck(environment: environment, logger: context.logger).verify(
            body.code, issuer: event.issuer, user: event.clientUserID, event: event)
        return JSONBody(try await environment.document(for: match.settled!, withToken: true))
    }

    /// The backend checks a code a user typed into the app; with `record`,
    /// a right code is also written down as an approved event.
    @Sendable func verify(_ request: Request, context: BackendRequestContext) async throws -> JSONBody<
        CodeVerificationDocument
    > {
        let user = try context.parameters.userID()
        let body = try await request.decodeJSON(CodeVerificationRequest.self, context: context)
        // Checked before the code, so a bad record costs no attempt.
        let record = try body.record.map {
            try EventController.Shown(
                details: $0.details, location: $0.location, ip: $0.ip, requesterName: $0.requesterName)
        }
        if record != nil, CodeFinishRule.refusal(recordingUnder: context.apiKey.userVerification) != nil {
            throw Self.needsPasskey
        }
        let match = try await CodeCheck(environment: environment, logger: context.logger).verify(
            body.code, issuer: context.apiKey.id, user: user, event: nil)
        var event: EventDocument?
        if let record {
            // After the code is spent: should this write fail, the answer
            // is an error and nobody is let in by this code.
            let recorded = ApprovalEvent.approvedByCode(
                of: match.device, ip: record.ip ?? context.clientAddress, location: record.location,
                details: record.details, requesterName: record.requesterName, now: environment.now())
            try await environment.store.insertEvent(recorded)
            EventTransitions(environment: environment).created(recorded)
            event = try await environment.document(for: recorded, withToken: true)
        }
        return JSONBody(
            CodeVerificationDocument(
                valid: true, deviceID: match.device.id, deviceName: match.device.name, event: event))
    }

    /// A new set of recovery codes for the device's user, replacing the old.
    @Sendable func createRecoveryCodes(_ request: Request, context: DeviceRequestContext) async throws -> JSONBody<
        RecoveryCodesDocument
    > {
        if let refusal = ConsoleApp.refusal(of: .recoveryCodes, apiKeyID: context.apiKey.id) {
            throw APIError.forbidden(.consoleApp, refusal)
        }
        if UserVerificationRule.accountChangeNeedsOwner(key: context.apiKey.userVerification) {
            try await OwnerVerification(environment: environment).require(
                of: context.device, assertion: try await OwnerVerification.assertion(in: request, context: context),
                challenge: try OwnerVerification.challenge(of: request), doing: "making recovery codes",
                required: true, keepingCounter: true)
        }
        let codes = (0..<RecoveryCode.setSize).map { _ in RecoveryCode.generate() }
        try await environment.store.replaceRecoveryCodes(
            codes.compactMap(RecoveryCode.digest), issuer: context.device.issuer,
            clientUserID: context.device.clientUserID, now: environment.now())
        return JSONBody(RecoveryCodesDocument(codes: codes, remaining: codes.count), status: .created)
    }

    /// How many recovery codes are left (never the codes).
    @Sendable func recoveryCodeStatus(_ request: Request, context: DeviceRequestContext) async throws -> JSONBody<
        RecoveryCodesDocument
    > {
        let left = try await environment.store.recoveryCodesLeft(
            issuer: context.device.issuer, clientUserID: context.device.clientUserID)
        return JSONBody(RecoveryCodesDocument(codes: nil, remaining: left))
    }
}
