public import Foundation

/// An app's API key. The secret is shown once and stored as a digest.
public struct APIKey: Sendable, Equatable {
    /// Public id, sent by agents and backends alike.
    public var id: String
    /// A name for people: shown to approvers as the app's name.
    public var name: String
    /// SHA-256 of the secret key.
    public var secretDigest: Data
    public var createdAt: Date
    /// The secret a rotation replaced, still taken until
    /// ``previousSecretExpiresAt`` so that backends can roll over.
    public var previousSecretDigest: Data?
    public var previousSecretExpiresAt: Date?
    /// Revoked keys take nothing, from that moment on.
    public var revokedAt: Date?
    /// The app's policy for every event made under the key: with
    /// `required`, each one requires user verification, whatever its
    /// request says (``UserVerificationRule``).
    public var userVerification: UserVerificationPolicy
    /// The event names the app has a quorum policy for, as the read that
    /// authenticates a request finds them with the key (nil where a read
    /// of the key did not ask): a new event's policy is read only for these.
    public var quorumPolicyEvents: Set<String>?

    public init(
        id: String, name: String, secretDigest: Data, createdAt: Date, previousSecretDigest: Data? = nil,
        previousSecretExpiresAt: Date? = nil, revokedAt: Date? = nil,
        userVerification: UserVerificationPolicy = .discouraged
    ) {
        self.id = id
        self.name = name
        self.secretDigest = secretDigest
        self.createdAt = createdAt
        self.previousSecretDigest = previousSecretDigest
        self.previousSecretExpiresAt = previousSecretExpiresAt
        self.revokedAt = revokedAt
        self.userVerification = userVerification
    }

    /// Keys are equal by what is stored of them: ``quorumPolicyEvents`` is
    /// what a read found beside the key, not part of it.
    public static func == (lhs: APIKey, rhs: APIKey) -> Bool {
        lhs.id == rhs.id && lhs.name == rhs.name && lhs.secretDigest == rhs.secretDigest
            && lhs.createdAt == rhs.createdAt && lhs.previousSecretDigest == rhs.previousSecretDigest
            && lhs.previousSecretExpiresAt == rhs.previousSecretExpiresAt && lhs.revokedAt == rhs.revokedAt
            && lhs.userVerification == rhs.userVerification
    }

    /// Whether an event named `event` may have a quorum policy at the app,
    /// and so whether its policy must be read.
    public func mayHaveQuorumPolicy(for event: String) -> Bool {
        quorumPolicyEvents?.contains(event) ?? true
    }

    /// Which of the key's secrets `digest` is, at `now`.
    public func secret(_ digest: Data, at now: Date) -> SecretMatch {
        guard revokedAt == nil else { return .refused }
        if SecretToken.constantTimeEquals(digest, secretDigest) { return .current }
        if let previousSecretDigest, let until = previousSecretExpiresAt, now < until,
            SecretToken.constantTimeEquals(digest, previousSecretDigest)
        {
            return .previous(until: until)
        }
        return .refused
    }

    /// What a presented secret is to its key.
    public enum SecretMatch: Equatable, Sendable {
        case current
        /// The secret a rotation replaced, taken until `until`.
        case previous(until: Date)
        /// Wrong, past its overlap, or the key is revoked.
        case refused
    }

    /// A new random API key id.
    public static func newID() -> String { "ck_" + SecretToken.generate(bytes: 12) }
}

/// A change to an API key, kept for audit and never garbage-collected.
public struct APIKeyChange: Sendable, Equatable {
    public enum Action: String, Sendable {
        case created, rotated, revoked
        /// Its user-verification policy was set (``APIKey/userVerification``).
        case userVerificationRequired = "user_verification_required"
        case userVerificationDiscouraged = "user_verification_discouraged"

        /// The change that sets the policy to `policy`.
        public static func setting(_ policy: UserVerificationPolicy) -> Action {
            switch policy {
            case .required: .userVerificationRequired
            case .discouraged: .userVerificationDiscouraged
            }
        }
    }

    public var apiKeyID: String
    public var action: Action
    /// How: `cli` (device-broker apikey) or `rest` (the backend, with its secret).
    public var via: String
    /// For `rest`, the client address.
    public var ip: String?
    public var at: Date

    public init(apiKeyID: String, action: Action, via: String, ip: String? = nil, at: Date) {
        self.apiKeyID = apiKeyID
        self.action = action
        self.via = via
        self.ip = ip
        self.at = at
    }
}

/// A one-time token that lets a user's first device enroll.
public struct EnrollmentToken: Sendable, Equatable {
    /// SHA-256 of the token.
    public var digest: Data
    public var issuer: String
    public var clientUserID: String
    public var createdAt: Date
    public var expiresAt: Date
    public var usedAt: Date?

    public init(
        digest: Data, issuer: String, clientUserID: String, createdAt: Date, expiresAt: Date, usedAt: Date? = nil
    ) {
        self.digest = digest
        self.issuer = issuer
        self.clientUserID = clientUserID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.usedAt = usedAt
    }
}

/// One of the broker's own ES256 signing keys.
public struct BrokerSigningKey: Sendable, Equatable {
    /// The `kid` published in the JWKS.
    public var id: String
    /// PKCS#8 PEM of the private key.
    public var privateKeyPEM: String
    public var createdAt: Date

    public init(id: String, privateKeyPEM: String, createdAt: Date) {
        self.id = id
        self.privateKeyPEM = privateKeyPEM
        self.createdAt = createdAt
    }
}

/// Validation of the app's user ids.
public enum ClientUserID {
    /// 1…256 bytes, no slash (it is a path segment) and no character that
    /// is not shown as itself (``DisplayText``): approvers read it.
    public static func isValid(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 256 && !id.contains("/")
            && !id.unicodeScalars.contains(where: DisplayText.isHidden)
    }

    /// Whether two user ids name the same user: byte for byte, as the
    /// stores compare them. Swift's `==` takes canonically equivalent
    /// strings as equal (`K` and the Kelvin sign, `é` and `e` with a
    /// combining accent), which the stores, and the apps, keep apart.
    public static func same(_ first: String, _ second: String) -> Bool {
        first.utf8.elementsEqual(second.utf8)
    }

    /// Whether `ids` names a user twice, byte for byte.
    public static func hasDuplicates(_ ids: [String]) -> Bool {
        Set(ids.map { Array($0.utf8) }).count != ids.count
    }
}
