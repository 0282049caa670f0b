public import Crypto
public import Foundation
public import JWTKit

/// What a trusted device answers to a pending event.
public enum Verdict: String, Codable, Sendable, CaseIterable {
    case approve
    case reject
    /// "This wasn't me": a rejection that also protects the user for a
    /// while (``FraudProtection``).
    case fraud
}

/// Claims of a decision: a compact JWS a trusted device signs to approve or
/// reject one pending event. The broker stores it verbatim.
public struct DecisionClaims: JWTPayload, Equatable {
    /// The event id.
    public var evt: String
    /// The per-event server nonce the broker showed in the inbox.
    public var nonce: String
    /// `approve`, `reject` or `fraud`.
    public var decision: Verdict
    /// The number the user typed from the requester's screen; required to
    /// approve an event that asks for number matching.
    public var match: String?
    /// The broker origin the device talks to.
    public var aud: String
    /// Issued-at, seconds since 1970.
    public var iat: Int
    /// A unique id; a decision is accepted at most once.
    public var jti: String
    /// For a pairing (`ENROLL_NEW_TRUSTED_DEVICE`): the RFC 7638 thumbprint
    /// of the new device's key, so an approval adds that key and no other.
    public var jkt: String?
    /// The digest of what the approver was shown (``ShownRequest``), so a
    /// verdict commits to the words it answered.
    public var shown: String?

    /// Creates decision claims.
    public init(
        evt: String, nonce: String, decision: Verdict, match: String?, aud: String, iat: Int, jti: String,
        jkt: String? = nil, shown: String? = nil
    ) {
        self.evt = evt
        self.nonce = nonce
        self.decision = decision
        self.match = match
        self.aud = aud
        self.iat = iat
        self.jti = jti
        self.jkt = jkt
        self.shown = shown
    }

    public func verify(using _: some JWTAlgorithm) async throws {}
}

/// Making and checking decisions. The exact format is in proto/signing.md.
public enum DecisionProof {
    /// The JOSE `typ` of a decision.
    public static let type = "countersign-decision+jwt"

    /// Signs a decision on one event, committing to `shown`, the digest of
    /// what the approver displayed; `newDevice` is the thumbprint of the key
    /// a pairing event asks to add.
    public static func make(
        key: P256.Signing.PrivateKey, eventID: String, nonce: String, verdict: Verdict, match: String?,
        shown: String, broker: String, now: Date, newDevice: String? = nil
    ) async throws -> String {
        let claims = DecisionClaims(
            evt: eventID, nonce: nonce, decision: verdict, match: match,
            aud: Origin(url: broker)?.description ?? broker, iat: Int(now.timeIntervalSince1970),
            jti: SecretToken.generate(bytes: 16), jkt: newDevice, shown: shown)
        return try await CompactJWS.sign(claims, type: type, key: key)
    }

    /// Signs a decision on an inbox item as the approver displayed it.
    public static func make(
        key: P256.Signing.PrivateKey, on item: InboxItem, verdict: Verdict, match: String?, broker: String,
        now: Date
    ) async throws -> String {
        try await make(
            key: key, eventID: item.event.ID, nonce: item.nonce, verdict: verdict, match: match,
            shown: ShownRequest(item).digest, broker: broker, now: now, newDevice: item.newDevice?.id)
    }

    /// Verifies a decision's signature and its binding to one event: event
    /// id, server nonce, what the approver was shown (`shown`, the digest of
    /// the event's ``ShownRequest``), audience and freshness, and for a pairing event
    /// (`newDevice`, the thumbprint of the key it would add) that an
    /// approval names that key in `jkt`. Whether the device may decide,
    /// and what the decision does, is ``DecisionRules``' job.
    public static func verify(
        _ token: String,
        key: DevicePublicKey,
        eventID: String,
        nonce: String,
        shown: String,
        newDevice: String? = nil,
        acceptedOrigins: Set<Origin>,
        now: Date,
        leeway: TimeInterval
    ) async throws(ProtocolError) -> DecisionClaims {
        try await verify(
            CompactJWS.Parsed(token), key: key, eventID: eventID, nonce: nonce, shown: shown, newDevice: newDevice,
            acceptedOrigins: acceptedOrigins, now: now, leeway: leeway)
    }

    /// ``verify(_:key:eventID:nonce:shown:newDevice:acceptedOrigins:now:leeway:)``
    /// of a decision already parsed.
    package static func verify(
        _ jws: CompactJWS.Parsed,
        key: DevicePublicKey,
        eventID: String,
        nonce: String,
        shown: String,
        newDevice: String? = nil,
        acceptedOrigins: Set<Origin>,
        now: Date,
        leeway: TimeInterval
    ) async throws(ProtocolError) -> DecisionClaims {
        let claims = try await CompactJWS.verify(jws, type: type, key: key, as: DecisionClaims.self)
        guard claims.evt == eventID else {
            throw ProtocolError(.wrongEvent, "the decision was signed for another event")
        }
        guard let expected = Base64URL.decode(nonce), let given = Base64URL.decode(claims.nonce),
            SecretToken.constantTimeEquals(expected, given)
        else {
            throw ProtocolError(.wrongNonce, "the decision does not carry this event's nonce")
        }
        guard claims.shown == shown else {
            throw ProtocolError(
                .wrongDisplay,
                claims.shown == nil
                    ? "the decision does not say what the approver was shown (shown)"
                    : "the decision was signed over another text of this request than the broker holds (shown)")
        }
        guard let audience = Origin(url: claims.aud), acceptedOrigins.contains(audience) else {
            throw ProtocolError(.wrongAudience, "the decision is addressed to another broker")
        }
        try Freshness.check(jti: claims.jti, iat: claims.iat, now: now, leeway: leeway, signed: "decision")
        if let newDevice, claims.decision == .approve, claims.jkt != newDevice {
            throw ProtocolError(.wrongKey, "the approval does not name the key this pairing would add (jkt)")
        }
        return claims
    }
}
