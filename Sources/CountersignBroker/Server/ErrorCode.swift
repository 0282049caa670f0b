import CountersignCore

/// Every code the broker answers a refusal with, in one table: the `error`
/// of an ``ErrorDocument``, of an OAuth error answer (RFC 6749 §5.2, CIBA
/// Core §11), or of an error sent back to an app's redirect URI. Code
/// matches a refusal by its case, never by its spelling; proto/openapi.yaml
/// lists the same codes (`ErrorCode`), and a test keeps the two in step.
public enum ErrorCode: String, CaseIterable, Sendable, Encodable {
    case accessDenied = "access_denied"
    case alreadyApproved = "already_approved"
    case alreadyDecided = "already_decided"
    case alreadyExists = "already_exists"
    case authorizationPending = "authorization_pending"
    case badSignature = "bad_signature"
    case bodyTooLarge = "body_too_large"
    case codeNotAccepted = "code_not_accepted"
    case codeUsed = "code_used"
    case conflict = "conflict"
    case consoleApp = "console_app"
    case notAnApprover = "not_an_approver"
    case tooFewApprovers = "too_few_approvers"
    case csrf = "csrf"
    case deviceExists = "device_exists"
    case deviceRemoved = "device_removed"
    case deviceRevoked = "device_revoked"
    case deviceSuspended = "device_suspended"
    case userSuspended = "user_suspended"
    case expired = "expired"
    case expiredToken = "expired_token"
    case hasTrustedDevice = "has_trusted_device"
    case internalError = "internal_error"
    case invalidBindingMessage = "invalid_binding_message"
    case invitationClosed = "invitation_closed"
    case invalidClient = "invalid_client"
    case invalidCode = "invalid_code"
    case invalidCursor = "invalid_cursor"
    case invalidDecision = "invalid_decision"
    case invalidEnrollmentToken = "invalid_enrollment_token"
    case invalidGrant = "invalid_grant"
    case invalidKey = "invalid_key"
    case invalidPasskey = "invalid_passkey"
    case invalidProof = "invalid_proof"
    case invalidRecoveryCode = "invalid_recovery_code"
    case invalidRequest = "invalid_request"
    case invalidScope = "invalid_scope"
    case invalidToken = "invalid_token"
    case invalidVerification = "invalid_verification"
    case loginRequired = "login_required"
    case malformed = "malformed"
    case malformedBody = "malformed_body"
    case malformedForm = "malformed_form"
    case malformedRequest = "malformed_request"
    case matchRequired = "match_required"
    case methodNotAllowed = "method_not_allowed"
    case noMailSender = "no_mail_sender"
    case noOperators = "no_operators"
    case noTrustedDevice = "no_trusted_device"
    case notApproved = "not_approved"
    case notFound = "not_found"
    case notOperator = "not_operator"
    case notProtected = "not_protected"
    case notSignedIn = "not_signed_in"
    case passkeyExists = "passkey_exists"
    case passkeysUnavailable = "passkeys_unavailable"
    case pushDisabled = "push_disabled"
    case replayed = "replayed"
    case replayedDecision = "replayed_decision"
    case replayedProof = "replayed_proof"
    case requestNotSupported = "request_not_supported"
    case requestURINotSupported = "request_uri_not_supported"
    case secretRequired = "secret_required"
    case serverError = "server_error"
    case shuttingDown = "shutting_down"
    case signCount = "sign_count"
    case slowDown = "slow_down"
    case stale = "stale"
    case storeUnavailable = "store_unavailable"
    case temporarilyUnavailable = "temporarily_unavailable"
    case tooManyCodes = "too_many_codes"
    case tooManyFailures = "too_many_failures"
    case tooManyPending = "too_many_pending"
    case tooManyWrongMatches = "too_many_wrong_matches"
    case totpExists = "totp_exists"
    case totpUnavailable = "totp_unavailable"
    case unauthorized = "unauthorized"
    case unknownDevice = "unknown_device"
    case unknownUserID = "unknown_user_id"
    case unsupportedGrantType = "unsupported_grant_type"
    case unsupportedMediaType = "unsupported_media_type"
    case unsupportedResponseType = "unsupported_response_type"
    case userNotVerified = "user_not_verified"
    case userProtected = "user_protected"
    case userVerificationRequired = "user_verification_required"
    case withdrawn = "withdrawn"
    case wrongAlgorithm = "wrong_algorithm"
    case wrongAudience = "wrong_audience"
    case wrongChallenge = "wrong_challenge"
    case wrongCode = "wrong_code"
    case wrongDevice = "wrong_device"
    case wrongDisplay = "wrong_display"
    case wrongEvent = "wrong_event"
    case wrongKey = "wrong_key"
    case wrongMatch = "wrong_match"
    case wrongMethod = "wrong_method"
    case wrongNonce = "wrong_nonce"
    case wrongOrigin = "wrong_origin"
    case wrongType = "wrong_type"
    case wrongURL = "wrong_url"
    case wrongUser = "wrong_user"
    case wrongVerdict = "wrong_verdict"
}

extension ErrorCode {
    /// The code a signed object refused for `code` is answered with.
    init(_ code: ProtocolError.Code) {
        self =
            switch code {
            case .malformed: .malformed
            case .invalidKey: .invalidKey
            case .wrongType: .wrongType
            case .wrongAlgorithm: .wrongAlgorithm
            case .badSignature: .badSignature
            case .wrongMethod: .wrongMethod
            case .wrongURL: .wrongURL
            case .wrongAudience: .wrongAudience
            case .wrongEvent: .wrongEvent
            case .wrongNonce: .wrongNonce
            case .wrongDisplay: .wrongDisplay
            case .wrongVerdict: .wrongVerdict
            case .stale: .stale
            case .wrongDevice: .wrongDevice
            case .wrongKey: .wrongKey
            case .wrongChallenge: .wrongChallenge
            case .wrongOrigin: .wrongOrigin
            case .userNotVerified: .userNotVerified
            // A backend's own check of a quorum; the broker counts approvals itself.
            case .tooFewApprovals: .malformed
            case .signCount: .signCount
            }
    }

    /// The code an event's refusal of an answer is answered with.
    init(_ refusal: DecisionOutcome.Refusal) {
        self =
            switch refusal {
            case .revokedDevice: .deviceRevoked
            case .suspendedDevice: .deviceSuspended
            case .otherUser: .wrongUser
            case .alreadyDecided: .alreadyDecided
            case .expired: .expired
            case .matchRequired: .matchRequired
            case .withdrawn: .withdrawn
            case .userVerificationRequired: .userVerificationRequired
            case .notApprover: .notAnApprover
            case .alreadyApproved: .alreadyApproved
            }
    }

    /// The code an app's authorization request is refused with.
    init(_ code: OpenIDAuthorization.Refusal.Code) {
        self =
            switch code {
            case .invalidRequest: .invalidRequest
            case .unsupportedResponseType: .unsupportedResponseType
            case .requestNotSupported: .requestNotSupported
            case .requestURINotSupported: .requestURINotSupported
            case .invalidScope: .invalidScope
            case .loginRequired: .loginRequired
            }
    }
}
