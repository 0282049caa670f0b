/// Checking a settled event's decision without trusting the broker: with
/// device keys the app pinned itself, against the event's own fields.
extension DecisionProof {
    /// Verifies the decision an event document carries: signed by one of
    /// `pinnedKeys` (the device the event names as `decided_by`), for this
    /// event, over exactly what the event's fields show for the app named
    /// `app` (``ShownRequest``), with the verdict the event's status claims,
    /// and, given `broker`, addressed to that broker.
    ///
    /// The broker's own event token only says what the broker holds now; a
    /// row edited in its database is re-signed with it. This check fails on
    /// such an edit, since no device signed the edited words. The server
    /// nonce, freshness and replay were the broker's to check when the
    /// decision arrived and are not repeated.
    ///
    /// An event that required user verification, or whose decision came
    /// with a passkey assertion, is checked further given `broker` and the
    /// passkeys the app pinned, by the id of the device they protect or
    /// protected (from `device.passkey_added`, or the devices' `passkey`;
    /// a device that replaced its passkey has had several): the assertion
    /// is of one of the deciding device's, its owner verified, signed over
    /// this decision at that broker (proto/signing.md §10). The counter was
    /// the broker's to check.
    public static func check(
        storedIn event: EventDocument, app: String, pinnedKeys: [DevicePublicKey], broker: String? = nil,
        pinnedPasskeys: [String: [PasskeyDocument]] = [:]
    ) async throws(ProtocolError) -> DecisionClaims {
        if let quorum = event.approvers {
            throw ProtocolError(
                .tooFewApprovals,
                "the event needed \(quorum.requiredApprovals) approvers; check each approval (checkQuorum)")
        }
        guard let token = event.decision, let deviceID = event.decidedBy else {
            throw ProtocolError(.malformed, "the event carries no device's decision (status \(event.status.rawValue))")
        }
        let jws = try CompactJWS.Parsed(token)
        guard try DeviceProof.deviceID(in: jws) == deviceID else {
            throw ProtocolError(.wrongDevice, "the decision is signed by another device than the event names")
        }
        guard let key = pinnedKeys.first(where: { $0.thumbprint == deviceID }) else {
            throw ProtocolError(.wrongDevice, "the deciding device \(deviceID) is not one of the pinned keys")
        }
        let claims = try await CompactJWS.verify(jws, type: type, key: key, as: DecisionClaims.self)
        guard claims.evt == event.ID else {
            throw ProtocolError(.wrongEvent, "the decision was signed for another event")
        }
        let shown = ShownRequest(event, app: app)
        guard claims.shown == shown.digest else {
            throw ProtocolError(.wrongDisplay, "the event's fields are not what the approver was shown and signed")
        }
        let matches =
            switch claims.decision {
            case .approve: event.status == .approved
            case .reject, .fraud: event.status == .rejected
            }
        guard matches else {
            throw ProtocolError(
                .wrongVerdict,
                "the device signed \(claims.decision.rawValue) but the event says \(event.status.rawValue)")
        }
        try checkAudience(of: claims, broker: broker)
        if event.userVerification == "required" || event.assertion != nil {
            try checkAssertion(
                event.assertion, decision: token, broker: broker, pinned: pinnedPasskeys[deviceID] ?? [])
        }
        return claims
    }

    /// Given `broker`, that the decision is addressed to it.
    static func checkAudience(of claims: DecisionClaims, broker: String?) throws(ProtocolError) {
        guard let broker else { return }
        guard let audience = Origin(url: claims.aud), let expected = Origin(url: broker),
            audience.names(sameBrokerAs: expected)
        else {
            throw ProtocolError(.wrongAudience, "the decision is addressed to another broker")
        }
    }

    /// The passkey assertion a decision came with: of one of `pinned`, its
    /// owner verified, over `token`, at `broker`.
    static func checkAssertion(
        _ assertion: PasskeyAssertion?, decision token: String, broker: String?, pinned: [PasskeyDocument]
    ) throws(ProtocolError) {
        guard let assertion else {
            throw ProtocolError(.userNotVerified, "the event required user verification and carries no assertion")
        }
        guard let broker, let origin = Origin(url: broker), let relyingParty = RelyingParty.of(broker: origin)?.0
        else {
            throw ProtocolError(.wrongOrigin, "checking a passkey assertion needs the broker's URL, naming a domain")
        }
        guard let pinned = pinned.first(where: { $0.credentialID == assertion.credentialID }) else {
            throw ProtocolError(.wrongKey, "the assertion is not of the passkey pinned for the deciding device")
        }
        _ = try assertion.verify(
            of: pinned.credentialID, publicKey: pinned.publicKey, challenge: PasskeyAssertion.challenge(for: token),
            relyingParty: relyingParty, storedSignCount: nil)
    }
}
