import Crypto
public import Foundation

/// A sign-in to an OpenID Connect relying party by approval: what the app
/// asked `/oauth/authorize` for, kept with the pending LOGIN it opened
/// (same id), then the single-use authorization code the approval earned.
///
/// The event's id is also the sign-in's `sid`: the ID token names it, and
/// the end-session endpoint ends it.
public struct OpenIDSignIn: Sendable, Equatable {
    public var eventID: String
    /// The client (API key) that asked; the only one its code works for.
    public var apiKeyID: String
    public var redirectURI: String
    /// The app's PKCE S256 challenge.
    public var codeChallenge: String
    public var state: String?
    public var nonce: String?
    /// The scopes granted, space-separated (always `openid`).
    public var scope: String
    public var createdAt: Date
    /// SHA-256 of the authorization code, once the approved page asked for it.
    public var codeDigest: Data?
    public var codeExpiresAt: Date?
    /// When the code bought tokens: it buys them once.
    public var redeemedAt: Date?
    /// When the app (or the person) signed out: its refresh tokens were revoked.
    public var endedAt: Date?
    /// Whether the client authenticated with its secret when it spent the
    /// code: then every refresh of the sign-in must too (RFC 6749 §10.4).
    public var confidential: Bool

    public init(
        eventID: String, apiKeyID: String, redirectURI: String, codeChallenge: String, state: String?,
        nonce: String?, scope: String, createdAt: Date, codeDigest: Data? = nil, codeExpiresAt: Date? = nil,
        redeemedAt: Date? = nil, endedAt: Date? = nil, confidential: Bool = false
    ) {
        self.eventID = eventID
        self.apiKeyID = apiKeyID
        self.redirectURI = redirectURI
        self.codeChallenge = codeChallenge
        self.state = state
        self.nonce = nonce
        self.scope = scope
        self.createdAt = createdAt
        self.codeDigest = codeDigest
        self.codeExpiresAt = codeExpiresAt
        self.redeemedAt = redeemedAt
        self.endedAt = endedAt
        self.confidential = confidential
    }

    /// How long the app has to redeem the code (RFC 6749 §4.1.2: short).
    public static let codeLifetime: TimeInterval = 120

    /// The refresh-token family of everything the sign-in's code buys.
    public var family: String { RefreshFamily.signIn(eventID: eventID).id }

    /// The scopes granted, one by one.
    public var scopes: [String] { scope.split(separator: " ").map(String.init) }

    /// The claims of the user name the granted scopes give, in the ID
    /// token and userinfo: `preferred_username` and `name` for `profile`;
    /// for `email`, the user name when it is an email address (unverified:
    /// nobody proved the mailbox; the operator named the user).
    public func nameClaims(user: String) -> (username: String?, email: String?) {
        let username = scopes.contains("profile") ? user : nil
        let email = scopes.contains("email") && IdentifierType.email.normalize(user) == user ? user : nil
        return (username, email)
    }

    /// `<event id>.<secret>`: the id finds the row, the secret (256 random
    /// bits, stored as its digest) is the proof.
    public static func code(eventID: String, secret: String) -> String { "\(eventID).\(secret)" }

    /// The event id and secret of a code, or nil if it is not a sign-in's.
    public static func parse(code: String) -> (eventID: String, secret: String)? {
        CIBARequest.parse(authRequestID: code)
    }
}

/// What spending a sign-in's code comes to: the stores apply it in the
/// transaction that reads the sign-in, so two redemptions at once are
/// told apart, and a replay ends what the first one bought.
public enum OpenIDCodeRule {
    public enum Verdict: Sendable, Equatable {
        /// The code buys tokens, once.
        case spend
        /// Not this sign-in's code (or no such sign-in).
        case unknown
        /// Spent before: it may be stolen, and the sign-in ends
        /// (RFC 6749 §4.1.2).
        case replayed
        case expired
        /// The sign-in was ended (signed out, or a replay ended it).
        case ended
    }

    public static func decide(_ signIn: OpenIDSignIn?, digest: Data, now: Date) -> Verdict {
        guard let signIn, let stored = signIn.codeDigest, SecretToken.constantTimeEquals(stored, digest) else {
            return .unknown
        }
        if signIn.redeemedAt != nil { return .replayed }
        if signIn.endedAt != nil { return .ended }
        guard let expiry = signIn.codeExpiresAt, now < expiry else { return .expired }
        return .spend
    }
}

/// The `sub` of a person signed in to an app: stable for the app and the
/// user name, the same in every ID token and userinfo answer, and within
/// the 255 ASCII characters OpenID Connect allows whatever the user name
/// is. Two apps see two different values for the same name. The app id
/// goes in with its length, so that no other pair of app and name hashes
/// the same text.
public enum OpenIDSubject {
    public static func of(apiKeyID: String, user: String) -> String {
        let text = "countersign sub \(apiKeyID.utf8.count):\(apiKeyID)\(user)"
        return Base64URL.encode(SHA256.hash(data: Data(text.utf8)))
    }
}
