/// How the user was authenticated when an event was approved, in the
/// words OpenID Connect gives backends: an `acr` (the class, one of
/// ``supportedACRs``) and its `amr` (RFC 8176 method references). The
/// event token, CIBA's ID tokens and webhooks carry both; `amr` follows
/// from `acr`, so nothing but the `acr` is stored with a token.
public struct ApprovalAuthentication: Sendable, Equatable {
    /// A trusted device signed the approval with its key.
    public static let deviceACR = "urn:countersign:acr:device"
    /// A trusted device signed it, and its passkey verified the owner
    /// (fingerprint, face or PIN) over that very decision.
    public static let passkeyACR = "urn:countersign:acr:passkey"
    /// The user typed a TOTP code from a trusted device instead.
    public static let totpACR = "urn:countersign:acr:totp"

    /// Every `acr` the broker gives, weakest first.
    public static let supportedACRs = [deviceACR, totpACR, passkeyACR]

    public let acr: String

    /// The RFC 8176 methods of `acr`: the device key is a software key
    /// (`swk`: a key file, or a browser's non-extractable key); a passkey
    /// adds a hardware-bound key (`hwk`) whose authenticator tested the
    /// user (`user`), two factors in all (`mfa`). Which test (fingerprint
    /// or PIN) WebAuthn does not say, so neither `fpt` nor `pin` is claimed.
    public var amr: [String] {
        switch acr {
        case Self.passkeyACR: ["swk", "hwk", "user", "mfa"]
        case Self.totpACR: ["otp"]
        default: ["swk"]
        }
    }

    public init(acr: String) { self.acr = acr }

    /// How `event` was approved: by code, by a device, or by a device with
    /// its owner verified by a passkey assertion the broker checked.
    public init(of event: ApprovalEvent) {
        switch event.method {
        case .totp: acr = Self.totpACR
        case .trustedDevice: acr = event.assertion == nil ? Self.deviceACR : Self.passkeyACR
        }
    }

    /// Whether a request's `acr_values` (space-separated, in order of
    /// preference) asks for the owner to be verified: the passkey class is
    /// the only one it names. OpenID Connect makes `acr_values` a wish; the
    /// broker holds the request to it, and the ID token says what was done.
    public static func requiresUserVerification(acrValues: String?) -> Bool {
        acrValues?.split(separator: " ").contains { $0 == passkeyACR } ?? false
    }
}
