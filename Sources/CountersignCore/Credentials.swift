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

    public init(id: String, name: String, secretDigest: Data, createdAt: Date) {
        self.id = id
        self.name = name
        self.secretDigest = secretDigest
        self.createdAt = createdAt
    }

    /// A new random API key id.
    public static func newID() -> String { "ck_" + SecretToken.generate(bytes: 12) }
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
}
