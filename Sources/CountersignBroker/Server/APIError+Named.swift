import HTTPTypes

/// Errors that one flow throws and another answers in its own terms (CIBA
/// and the sign-in page speak OAuth): named once here and matched by value,
/// never by their code's spelling.
extension APIError {
    /// The user has no device that could approve a request.
    static let noTrustedDevice = APIError(
        .conflict, .noTrustedDevice,
        "this user has no trusted device that can approve the request (none, or every one suspended)")

    /// The directory does not list the user as enabled: no device is added.
    static let userSuspended = APIError(
        .forbidden, .userSuspended,
        "the directory does not list this user as enabled: no device can be added until it does")

    /// Passkeys cannot be asked for: WebAuthn takes no address as the RP ID.
    static let passkeysUnavailable = APIError(
        .serviceUnavailable, .passkeysUnavailable,
        "passkeys need the broker's public URL to name a domain (localhost on one machine), not an address")
}
