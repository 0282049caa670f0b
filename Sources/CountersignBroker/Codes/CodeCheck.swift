import CountersignCore
import CountersignOTP
import CountersignStore
import Foundation
import Hummingbird
import Logging

/// Checking a TOTP code against every trusted device of a user.
///
/// The attempt is counted in the store first, so concurrent guesses
/// (through any broker instance) cannot outrun the per-event and per-user
/// limits. A code of the current or previous step of any unrevoked device
/// with a secret matches; the step is then accepted once, in one write
/// that also settles the event, if any.
struct CodeCheck {
    let environment: BrokerEnvironment
    let logger: Logger

    struct Match {
        let device: TrustedDevice
        let step: Int64
        let settled: ApprovalEvent?
    }

    func verify(_ code: String, issuer: String, user: String, event: ApprovalEvent?) async throws -> Match {
        guard let vault = environment.vault else { throw Self.unavailable }
        guard TOTPParameters.isWellFormed(code) else {
            throw APIError.badRequest("a code is 6 digits", code: .invalidCode)
        }
        let now = environment.now()
        let attempt: CodeAttempt
        do {
            attempt = try await environment.store.reserveCodeAttempt(
                issuer: issuer, clientUserID: user, eventID: event?.id, limits: environment.codeLimits, now: now)
        } catch let error as StoreError {
            throw try refusal(error, now: now)
        }
        let secrets = try await environment.store.devices(issuer: issuer, clientUserID: user)
            .filter { $0.canAct && $0.sealedTOTPSecret != nil }
            .compactMap { device in unseal(device, vault: vault).map { (device, $0) } }
        for step in TOTPParameters.acceptedSteps(at: now) {
            for (device, secret) in secrets {
                guard SecretToken.constantTimeEquals(Data(secret.code(at: step).utf8), Data(code.utf8)) else {
                    continue
                }
                guard (device.lastTOTPStep ?? .min) < step else { throw APIError.codeUsed(now: now) }
                let settled = try await EventTransitions(environment: environment).acceptCode(
                    step: step, of: device, for: event, now: now)
                return Match(device: device, step: step, settled: settled)
            }
        }
        let left = attempt.eventAttemptsLeft.map { "; \(APIError.triesLeft($0)) for this request" } ?? ""
        throw APIError(.unprocessableContent, .wrongCode, "that code is wrong\(left)")
    }

    /// The device's secret; nil, and logged, if it does not open (sealed
    /// under another key): that device has no codes, the others still do.
    private func unseal(_ device: TrustedDevice, vault: TOTPVault) -> TOTPSecret? {
        do {
            return try vault.unseal(device.sealedTOTPSecret!, deviceID: device.id)
        } catch {
            logger.error(
                "a TOTP secret does not open with this --totp-key-file",
                metadata: ["device": "\(device.id)", "error": "\(error)"])
            return nil
        }
    }

    /// Why the store would not count the attempt: the request's own
    /// limit or state (the refusal names the event), or the user's lock-out.
    private func refusal(_ error: StoreError, now: Date) throws -> APIError {
        switch error.code {
        case .limitReached where error.event != nil:
            return APIError(
                .tooManyRequests, .tooManyCodes,
                "this request takes no more codes; approve it on a trusted device or start a new one")
        case .limitReached(let retryAfter):
            return APIError(
                .tooManyRequests, .tooManyFailures,
                "too many wrong codes for this user; try again in \(retryAfter) s",
                headers: [.retryAfter: String(retryAfter)])
        case .conflict:
            guard let current = error.event else { throw error }
            return EventTransitions.closed(current, at: now)
        case .notFound: return .notFound("no such event")
        default: throw error
        }
    }

    static let unavailable = APIError(
        .notImplemented, .totpUnavailable,
        "this broker takes no TOTP codes: its operator has not given it a TOTP key (device-broker serve --totp-key-file)"
    )
}
