/// How an app signs in by approval: the scopes it registered, and whether
/// it is a public client (RFC 6749 §2.1), one that keeps no secret (a
/// native app, a CLI) and so redeems its codes with PKCE alone. Every
/// other app is confidential: it has an API secret and must prove it at
/// the token endpoint (RFC 6749 §3.2.1, §4.1.3).
public struct OpenIDClientRegistration: Sendable, Equatable {
    /// `openid` and what else the app signs in with.
    public var scopes: [String]
    /// Registered as a public client (`apikey set-openid-scopes --public`).
    public var isPublic: Bool

    public init(scopes: [String], isPublic: Bool = false) {
        self.scopes = scopes
        self.isPublic = isPublic
    }

    /// Why a client that did (`authenticated`) or did not prove its secret
    /// may not redeem a code of this app, or nil: a confidential app's code
    /// is spent only with its secret, so a stolen code and verifier buy
    /// nothing without it.
    public func refusal(authenticated: Bool) -> String? {
        guard !authenticated, !isPublic else { return nil }
        return "this app is a confidential client: authenticate with its secret (client_secret_basic or "
            + "client_secret_post); an app that keeps no secret is registered with "
            + "apikey set-openid-scopes --public"
    }
}
