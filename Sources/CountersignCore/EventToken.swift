public import Foundation
public import JWTKit

/// Claims of an event token: the broker's signed statement of how an event
/// ended. Any JOSE library verifies it with the broker's JWKS alone.
public struct EventTokenClaims: JWTPayload, Equatable {
    /// The broker's issuer URL.
    public var iss: String
    /// The app's user id (`client_user_id`).
    public var sub: String
    /// The API key id of the app the event belongs to.
    public var aud: String
    public var iat: Int
    public var exp: Int
    /// The event id.
    public var jti: String
    /// The event name, e.g. `LOGIN`.
    public var event: String
    /// `approved` or `rejected`.
    public var status: EventStatus
    /// Shorthand for `status == approved`.
    public var approved: Bool
    /// `TRUSTED_DEVICE`, `TOTP`, … .
    public var method: AuthMethod
    /// The device that decided, if one did.
    public var decidedBy: String?
    /// For an approved event, how the user was authenticated
    /// (``ApprovalAuthentication``): its class and RFC 8176 methods.
    public var acr: String?
    public var amr: [String]?
    /// For an event that needed a quorum: how many distinct approvers it
    /// took, and each approval's signed decision as it came, oldest first
    /// (proto/signing.md §11).
    public var requiredApprovals: Int?
    public var approvals: [String]?

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, iat, exp, jti, event, status, approved, method, acr, amr, approvals
        case decidedBy = "decided_by"
        case requiredApprovals = "required_approvals"
    }

    /// The token for a settled event.
    public init(event: ApprovalEvent, issuer: String, now: Date, lifetime: TimeInterval) {
        let status = event.status(at: now)
        let issuedAt = event.decidedAt ?? now
        self.iss = issuer
        self.sub = event.clientUserID
        self.aud = event.issuer
        self.iat = Int(issuedAt.timeIntervalSince1970)
        self.exp = Int((issuedAt + lifetime).timeIntervalSince1970)
        self.jti = event.id
        self.event = event.name
        self.status = status
        self.approved = status == .approved
        self.method = event.method
        self.decidedBy = event.decidedBy
        if let quorum = event.quorum {
            self.requiredApprovals = quorum.requiredApprovals
            self.approvals = event.approvals.compactMap(\.decision)
        }
        if status == .approved {
            let authentication = ApprovalAuthentication(of: event)
            self.acr = authentication.acr
            self.amr = authentication.amr
        }
    }

    /// Checks expiry against the current time.
    public func verify(using _: some JWTAlgorithm) async throws {
        try ExpirationClaim(value: Date(timeIntervalSince1970: TimeInterval(exp))).verifyNotExpired()
    }
}
