/// How a CIBA user authenticated, as the ID token's `acr` says it.
public enum CIBAAuthentication {
    /// A trusted device signed the approval with its key.
    public static let deviceACR = "urn:countersign:acr:device"
    /// The user typed a TOTP code from a trusted device instead.
    public static let totpACR = "urn:countersign:acr:totp"

    public static func acr(of method: AuthMethod) -> String {
        switch method {
        case .trustedDevice: deviceACR
        case .totp: totpACR
        }
    }
}
