/// The parameters of a sign-in by approval at `/oauth/authorize` (OpenID
/// Connect Core §3.1.2.1), checked once the client and its redirect URI
/// are known to be registered: every refusal here goes back to the app as
/// an OAuth error, with its `state`.
public struct OpenIDAuthorization: Sendable, Equatable {
    public var redirectURI: String
    public var codeChallenge: String
    public var state: String?
    public var nonce: String?
    /// A user name the app suggests (`login_hint`), if it is one.
    public var loginHint: String?
    /// The scopes granted: those asked for that the broker gives, `openid` first.
    public var scope: String
    /// `acr_values` asked for the passkey class: the device must verify its owner.
    public var requiresUserVerification: Bool

    /// What the broker gives: `openid`, the user name as `profile`, and as
    /// `email` when it is an email address.
    public static let supportedScopes = ["openid", "profile", "email"]

    public static let supportedPrompts = ["none", "login", "consent", "select_account"]

    /// An OAuth error for the app.
    public struct Refusal: Error, Sendable, Equatable {
        public let error: Code
        public let description: String

        /// The OAuth and OpenID Connect error codes an authorization request is refused with.
        public enum Code: String, Sendable, CaseIterable {
            case invalidRequest = "invalid_request"
            case unsupportedResponseType = "unsupported_response_type"
            case requestNotSupported = "request_not_supported"
            case requestURINotSupported = "request_uri_not_supported"
            case invalidScope = "invalid_scope"
            case loginRequired = "login_required"
        }

        public init(_ error: Code, _ description: String) {
            self.error = error
            self.description = description
        }
    }

    /// Which hosted page `/oauth/authorize` opens, which the app decides,
    /// never the request: an app that registered its sign-in scopes
    /// (`registered`) signs in by approval, and only so (a request cannot
    /// turn it into email verification, whose tokens name no approval);
    /// any other app gets the email or phone verification page, as before.
    public static func signsIn(registered: OpenIDClientRegistration?) -> Bool { registered != nil }

    /// Why an app cannot register `scopes` for sign-in, or nil: each one the
    /// broker gives, `openid` among them, none twice.
    public static func problem(registering scopes: [String]) -> String? {
        if let unknown = scopes.first(where: { !supportedScopes.contains($0) }) {
            return "\(unknown) is not a scope the broker gives (\(supportedScopes.joined(separator: ", ")))"
        }
        guard scopes.contains("openid") else { return "the scopes must include openid" }
        guard Set(scopes).count == scopes.count else { return "a scope is given twice" }
        return nil
    }

    /// The request's parameters, checked in the order OpenID Connect Core
    /// names them; `parameter` reads one from the query. The scopes granted
    /// are those asked for that the app may have (`allowed`).
    public static func check(_ parameter: (String) -> String?, allowed: [String])
        -> Result<Self, Refusal>
    {
        func refuse(_ description: String) -> Result<Self, Refusal> {
            .failure(Refusal(.invalidRequest, description))
        }
        guard let responseType = parameter("response_type") else { return refuse("response_type is required") }
        guard responseType == "code" else {
            return .failure(Refusal(.unsupportedResponseType, "only response_type=code is supported"))
        }
        guard [nil, "query"].contains(parameter("response_mode")) else {
            return refuse("only response_mode=query is supported")
        }
        if parameter("request") != nil {
            return .failure(Refusal(.requestNotSupported, "request objects are not supported"))
        }
        if parameter("request_uri") != nil {
            return .failure(Refusal(.requestURINotSupported, "request_uri is not supported"))
        }
        let asked = (parameter("scope") ?? "").split(separator: " ").map(String.init)
        guard asked.contains("openid") else { return .failure(Refusal(.invalidScope, "scope must include openid")) }
        let prompts = Set((parameter("prompt") ?? "").split(separator: " ").map(String.init))
        if prompts.contains("none") {
            guard prompts.count == 1 else { return refuse("prompt=none cannot be combined with other values") }
            // Every sign-in is approved on a device: there is never a
            // session to answer without the person.
            return .failure(Refusal(.loginRequired, "every sign-in is approved on a trusted device"))
        }
        if let maxAge = parameter("max_age"), Int(maxAge).map({ $0 < 0 }) ?? true {
            return refuse("max_age must be a number of seconds")
        }
        guard parameter("code_challenge_method") == PKCE.method else {
            return refuse("PKCE is required: code_challenge_method must be S256")
        }
        guard let challenge = parameter("code_challenge"), PKCE.isValidChallenge(challenge) else {
            return refuse("code_challenge must be the base64url SHA-256 of a code_verifier (S256)")
        }
        let state = parameter("state")
        let nonce = parameter("nonce")
        guard (state?.utf8.count ?? 0) <= 512 else { return refuse("state may be at most 512 bytes") }
        guard (nonce?.utf8.count ?? 0) <= 256 else { return refuse("nonce may be at most 256 bytes") }
        let granted = supportedScopes.filter { asked.contains($0) && allowed.contains($0) }
        return .success(
            Self(
                redirectURI: parameter("redirect_uri") ?? "", codeChallenge: challenge, state: state, nonce: nonce,
                loginHint: parameter("login_hint").flatMap { ClientUserID.isValid($0) ? $0 : nil },
                scope: granted.joined(separator: " "),
                requiresUserVerification: ApprovalAuthentication.requiresUserVerification(
                    acrValues: parameter("acr_values"))))
    }
}
