import CountersignCore
import CountersignOTP
import Foundation
import Hummingbird

extension APIError {
    /// Why an event takes no decision, withdrawal or code: one answer per
    /// reason, whichever flow met it.
    static func refused(_ refusal: DecisionOutcome.Refusal) -> APIError {
        switch refusal {
        case .revokedDevice: .forbidden(ErrorCode(refusal), "this device was removed from the account")
        case .suspendedDevice:
            .forbidden(
                ErrorCode(refusal),
                "this device is suspended: the directory does not list its user as enabled (nothing was deleted)")
        case .otherUser: .forbidden(ErrorCode(refusal), "this device does not belong to the event's user")
        case .alreadyDecided: .conflict(ErrorCode(refusal), "the event was already decided; the first decision stands")
        case .expired: APIError(.gone, ErrorCode(refusal), "the approval window has closed")
        case .withdrawn: APIError(.gone, ErrorCode(refusal), "the requesting machine withdrew the request")
        case .matchRequired:
            .badRequest("approving needs the number the requesting machine shows", code: ErrorCode(refusal))
        case .userVerificationRequired:
            .forbidden(
                ErrorCode(refusal),
                "approving this request needs the device's passkey, with its owner verified (screen lock, fingerprint, PIN)"
            )
        case .notApprover: .forbidden(ErrorCode(refusal), "this device's user is not one of the request's approvers")
        case .alreadyApproved:
            .conflict(
                ErrorCode(refusal), "this user approved the request already; another person's approval is needed")
        }
    }

    /// Why a request is refused as a pairing.
    static func refused(_ refusal: PairingRule.Refusal) -> APIError {
        switch refusal {
        case .newDeviceOutsidePairing: .badRequest("new_device belongs to ENROLL_NEW_TRUSTED_DEVICE events only")
        case .askedByTrustedDevice:
            .badRequest("a pairing is asked for by the new machine, not by a trusted device")
        case .newDeviceMissing:
            .badRequest("a pairing needs new_device: the new machine's public_key, name and type")
        case .codeRequired: .badRequest("a pairing always asks for its pairing code")
        }
    }

    /// A right code of a time step spent already (by this code or a later one).
    static func codeUsed(now: Date) -> APIError {
        APIError(
            .unprocessableContent, .codeUsed,
            "this code was used already; wait \(TOTPParameters.secondsLeft(at: now)) s for the next one")
    }

    /// "1 try left", "2 tries left": how every count of attempts says it.
    static func triesLeft(_ count: Int) -> String { "\(count) \(count == 1 ? "try" : "tries") left" }
}
