public import CountersignCore
import Foundation
import NIOHTTP1

extension CountersignClient {
    struct CodeBody: Encodable { let code: String }

    /// Asks the broker for this device's TOTP secret; it is made and shown
    /// once (`totp_exists` after that, `totp_unavailable` on a broker
    /// without a TOTP key).
    public func createTOTPSecret(_ credential: DeviceCredential) async throws -> TOTPSecretDocument {
        let path = "/api/v1/devices/self/totp"
        return try await connection.send(
            .POST, path, headers: [try await proofHeader(credential, .POST, path)], as: TOTPSecretDocument.self)
    }

    /// Finishes a pending LOGIN this machine asked for with a TOTP code
    /// from a trusted device of the user.
    public func submitCode(_ code: String, for ticket: EventTicket) async throws -> EventDocument {
        try await connection.send(
            .POST, "/api/v1/events/\(ticket.event.ID)/code",
            headers: [("Authorization", "Bearer \(ticket.requesterToken ?? "")")], body: CodeBody(code: code),
            as: EventDocument.self)
    }

    /// A new set of recovery codes for the credential's user; the old set
    /// stops working. The broker keeps only their digests.
    public func createRecoveryCodes(_ credential: DeviceCredential) async throws -> [String] {
        let path = "/api/v1/recovery-codes"
        return try await connection.send(
            .POST, path, headers: [try await proofHeader(credential, .POST, path)], as: RecoveryCodesDocument.self
        ).codes ?? []
    }

    /// How many of the user's recovery codes are unused.
    public func recoveryCodesLeft(_ credential: DeviceCredential) async throws -> Int {
        let path = "/api/v1/recovery-codes"
        return try await connection.send(
            .GET, path, headers: [try await proofHeader(credential, .GET, path)], as: RecoveryCodesDocument.self
        ).remaining
    }
}

extension CountersignBackend {
    /// Checks a TOTP code a user typed into the app: which of their devices
    /// it came from, or a `wrong_code` / `code_used` / `too_many_failures`
    /// error. With `record`, a right code is also recorded as an approved
    /// event (method `TOTP`), returned in the answer's `event`.
    public func verifyCode(user: String, code: String, record: CodeRecord? = nil) async throws
        -> CodeVerificationDocument
    {
        try await connection.send(
            .POST, "/api/v1/users/\(Self.escape(user))/totp/verify", headers: [authorization],
            body: CodeVerificationRequest(code: code, record: record), as: CodeVerificationDocument.self)
    }
}
