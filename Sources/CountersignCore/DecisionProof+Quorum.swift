/// Checking an event approved by several people without trusting the
/// broker (proto/signing.md §11): each approval is its approver's own
/// device's signature over what they were shown, so that nobody, the
/// broker's operator included, can make up a quorum.
extension DecisionProof {
    /// One approval that counted towards a quorum.
    public struct CountedApproval: Sendable, Equatable {
        /// The approver, as the backend pinned their device's key.
        public let clientUserID: String
        public let deviceID: String
        public let claims: DecisionClaims
    }

    /// Verifies that an approved event's approvals make the quorum the
    /// backend asked for: at least `requiredApprovals` distinct users of
    /// `approvers` (the requesting user, the event's `client_user_id`, not
    /// among them unless `allowRequester`), each by a decision that:
    ///
    /// - is signed by a device key pinned for that user in `pinnedKeys`
    ///   (by user id, from `device.enrolled` or the devices API): the
    ///   approver is who pinned the key, not who the broker says;
    /// - approves this event (`evt`), over exactly what its fields show
    ///   for the app named `app` (``ShownRequest``);
    /// - given `broker`, is addressed to it; and, for an event that
    ///   required user verification or an approval that came with a passkey
    ///   assertion, carries one of a passkey pinned for its device, its
    ///   owner verified, over that decision (§10).
    ///
    /// A decision that fails any of these fails the check (`bad_signature`,
    /// `wrong_event`, …), whoever made it. An approver counts once however
    /// many of their devices, or copies of one decision, the event lists;
    /// approvals of users outside the quorum do not count. Fewer than
    /// `requiredApprovals` is `too_few_approvals`. Returns the approvals
    /// that counted, one per approver, in the event's order.
    public static func checkQuorum(
        storedIn event: EventDocument, app: String, pinnedKeys: [String: [DevicePublicKey]], approvers: [String],
        requiredApprovals: Int, allowRequester: Bool = false, broker: String? = nil,
        pinnedPasskeys: [String: [PasskeyDocument]] = [:]
    ) async throws(ProtocolError) -> [CountedApproval] {
        guard event.status == .approved else {
            throw ProtocolError(.wrongVerdict, "the event says \(event.status.rawValue), not approved")
        }
        let shown = ShownRequest(event, app: app).digest
        guard requiredApprovals >= 1 else {
            throw ProtocolError(.tooFewApprovals, "a quorum takes at least one approval; give the number you asked for")
        }
        // User ids compare byte for byte (``ClientUserID/same(_:_:)``): a
        // look-alike id is another user.
        let counting = approvers.filter { allowRequester || !ClientUserID.same($0, event.clientUserID) }
        var counted: [CountedApproval] = []
        for approval in event.approvals ?? [] {
            guard let decision = approval.decision else {
                throw ProtocolError(.malformed, "an approval carries no decision: read the event as its backend")
            }
            let jws = try CompactJWS.Parsed(decision)
            let deviceID = try DeviceProof.deviceID(in: jws)
            guard
                let (user, key) = pinnedKeys.lazy.compactMap({ user, keys in
                    keys.first { $0.thumbprint == deviceID }.map { (user, $0) }
                }).first
            else {
                throw ProtocolError(.wrongDevice, "an approval is signed by \(deviceID), not a pinned device key")
            }
            let claims = try await CompactJWS.verify(jws, type: type, key: key, as: DecisionClaims.self)
            guard claims.evt == event.ID else {
                throw ProtocolError(.wrongEvent, "an approval was signed for another event")
            }
            guard claims.decision == .approve else {
                throw ProtocolError(.wrongVerdict, "an approval's device signed \(claims.decision.rawValue)")
            }
            guard claims.shown == shown else {
                throw ProtocolError(.wrongDisplay, "the event's fields are not what an approver was shown and signed")
            }
            try checkAudience(of: claims, broker: broker)
            if event.userVerification == "required" || approval.assertion != nil {
                try checkAssertion(
                    approval.assertion, decision: decision, broker: broker,
                    pinned: pinnedPasskeys[deviceID] ?? [])
            }
            guard counting.contains(where: { ClientUserID.same($0, user) }),
                !counted.contains(where: { ClientUserID.same($0.clientUserID, user) })
            else { continue }
            counted.append(CountedApproval(clientUserID: user, deviceID: deviceID, claims: claims))
        }
        guard counted.count >= requiredApprovals else {
            throw ProtocolError(
                .tooFewApprovals,
                "\(counted.count) distinct approver(s) of the quorum approved; \(requiredApprovals) are required")
        }
        return counted
    }
}
