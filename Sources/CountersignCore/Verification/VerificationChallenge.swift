public import Foundation

/// What is being verified: an email address or a phone number.
public enum IdentifierType: String, Codable, Sendable, CaseIterable {
    case email = "EMAIL"
    case phone = "PHONE"

    /// The identifier in canonical form, or nil if it is not one.
    ///
    /// Emails are trimmed and lower-cased (one `@`, a dotted domain, no
    /// spaces, ≤ 254 bytes); phone numbers become E.164 (`+` and 8-15
    /// digits; spaces, dots, dashes and parentheses are dropped).
    public func normalize(_ raw: String) -> String? {
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        switch self {
        case .email:
            let lowered = trimmed.lowercased()
            let parts = lowered.split(separator: "@", omittingEmptySubsequences: false)
            guard lowered.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."),
                !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
                lowered.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 32 && $0 != "<" && $0 != ">" })
            else { return nil }
            return lowered
        case .phone:
            let kept = trimmed.filter { !" .-()".contains($0) }
            guard kept.hasPrefix("+") else { return nil }
            let digits = kept.dropFirst()
            guard (8...15).contains(digits.count), digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
                digits.first != "0"
            else { return nil }
            return kept
        }
    }
}

/// One run of the hosted verification page: a code sent to an identifier,
/// then (once the code is typed) a single-use authorization code that the
/// app redeems with its PKCE verifier.
public struct VerificationChallenge: Sendable, Equatable {
    /// A positive integer below 2^53, so that every JSON parser keeps it exact.
    public var id: Int64
    public var apiKeyID: String
    public var identifierType: IdentifierType
    /// Canonical form (see ``IdentifierType/normalize(_:)``).
    public var identifier: String
    /// ``OneTimeCode/digest(_:challengeID:)`` of the code last sent.
    public var codeDigest: Data
    public var codeExpiresAt: Date
    /// The app's PKCE S256 challenge.
    public var codeChallenge: String
    public var redirectURL: String
    public var state: String?
    /// The OpenID Connect `nonce` to echo in the ID token, if the app sent one.
    public var nonce: String?
    public var createdAt: Date
    public var failedAttempts: Int
    public var sends: Int
    public var verifiedAt: Date?
    /// SHA-256 of the authorization code, once the code was typed right.
    public var authorizationCodeDigest: Data?
    public var authorizationCodeExpiresAt: Date?
    public var redeemedAt: Date?
    /// The browser's user agent, reported as `device_name`.
    public var userAgent: String
    public var ip: String

    public init(
        id: Int64, apiKeyID: String, identifierType: IdentifierType, identifier: String, codeDigest: Data,
        codeExpiresAt: Date, codeChallenge: String, redirectURL: String, state: String?, nonce: String? = nil,
        createdAt: Date,
        failedAttempts: Int = 0, sends: Int = 1, verifiedAt: Date? = nil, authorizationCodeDigest: Data? = nil,
        authorizationCodeExpiresAt: Date? = nil, redeemedAt: Date? = nil, userAgent: String, ip: String
    ) {
        self.id = id
        self.apiKeyID = apiKeyID
        self.identifierType = identifierType
        self.identifier = identifier
        self.codeDigest = codeDigest
        self.codeExpiresAt = codeExpiresAt
        self.codeChallenge = codeChallenge
        self.redirectURL = redirectURL
        self.state = state
        self.nonce = nonce
        self.createdAt = createdAt
        self.failedAttempts = failedAttempts
        self.sends = sends
        self.verifiedAt = verifiedAt
        self.authorizationCodeDigest = authorizationCodeDigest
        self.authorizationCodeExpiresAt = authorizationCodeExpiresAt
        self.redeemedAt = redeemedAt
        self.userAgent = userAgent
        self.ip = ip
    }

    /// A new random challenge id in 1 ..< 2^53.
    public static func newID() -> Int64 { Int64.random(in: 1..<(1 << 53)) }
}

/// The limits of email/phone verification.
public struct VerificationPolicy: Sendable {
    /// How long a sent code can be typed.
    public var codeLifetime: TimeInterval
    /// Wrong codes after which the challenge is dead.
    public var maxAttempts: Int
    /// Codes sent per challenge (the first and the re-sends).
    public var maxSends: Int
    /// How long the app has to redeem the authorization code.
    public var authorizationCodeLifetime: TimeInterval
    /// Challenges one identifier may start per ``sendWindow``.
    public var sendsPerIdentifier: Int
    /// Challenges one client address may start per ``sendWindow``.
    public var sendsPerAddress: Int
    public var sendWindow: TimeInterval

    public init(
        codeLifetime: TimeInterval = 300, maxAttempts: Int = 5, maxSends: Int = 3,
        authorizationCodeLifetime: TimeInterval = 300, sendsPerIdentifier: Int = 5, sendsPerAddress: Int = 20,
        sendWindow: TimeInterval = 900
    ) {
        self.codeLifetime = codeLifetime
        self.maxAttempts = maxAttempts
        self.maxSends = maxSends
        self.authorizationCodeLifetime = authorizationCodeLifetime
        self.sendsPerIdentifier = sendsPerIdentifier
        self.sendsPerAddress = sendsPerAddress
        self.sendWindow = sendWindow
    }
}

/// A verified email address or phone number of one app's user.
public struct VerifiedIdentity: Sendable, Equatable {
    /// A UUID.
    public var id: String
    /// The user it belongs to: a UUID, one user per identifier.
    public var userID: String
    public var apiKeyID: String
    public var identifierType: IdentifierType
    public var identifier: String
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, userID: String, apiKeyID: String, identifierType: IdentifierType, identifier: String,
        createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userID = userID
        self.apiKeyID = apiKeyID
        self.identifierType = identifierType
        self.identifier = identifier
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A refresh token as stored: its digest, and the family every rotation of
/// it belongs to, so that a reused token can revoke them all.
public struct RefreshTokenRecord: Sendable, Equatable {
    public var digest: Data
    public var familyID: String
    public var apiKeyID: String
    public var identityID: String
    public var createdAt: Date
    public var expiresAt: Date
    public var rotatedAt: Date?
    public var revokedAt: Date?
    /// When the user proved the identifier, kept across rotations for `auth_time`.
    public var authTime: Date?
    /// For a CIBA grant, the user the device approved for (`identityID` is
    /// then empty: no verified email or phone stands behind it).
    public var clientUserID: String?
    /// For a CIBA grant, how the user authenticated (the ID token's `acr`),
    /// kept across rotations.
    public var acr: String?

    public init(
        digest: Data, familyID: String, apiKeyID: String, identityID: String, createdAt: Date, expiresAt: Date,
        rotatedAt: Date? = nil, revokedAt: Date? = nil, authTime: Date? = nil, clientUserID: String? = nil,
        acr: String? = nil
    ) {
        self.digest = digest
        self.familyID = familyID
        self.apiKeyID = apiKeyID
        self.identityID = identityID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.rotatedAt = rotatedAt
        self.revokedAt = revokedAt
        self.authTime = authTime
        self.clientUserID = clientUserID
        self.acr = acr
    }
}
