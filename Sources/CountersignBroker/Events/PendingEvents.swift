import CountersignCore
import CountersignStore
import Foundation

/// Opening a pending event for a trusted device to decide, whoever asks:
/// a requester or the backend through the events API, a CIBA client
/// through `/oauth/bc-authorize`.
struct PendingEvents {
    let environment: BrokerEnvironment

    /// What the asker wants shown, already held to the display rules.
    struct Draft {
        let key: APIKey
        let user: String
        let name: String
        let ip: String
        var location: String? = nil
        var details: String? = nil
        var requesterName: String? = nil
        var numberMatching = true
        var newDevice: NewDevice? = nil
        /// What the request asks of user verification, nil if it does not
        /// say; the key's policy may require it all the same.
        var userVerification: UserVerificationPolicy? = nil
        /// Seconds until it expires; the broker's window if nil.
        var window: TimeInterval? = nil
        /// The limits it is held to; the broker's if nil.
        var limits: PendingLimits? = nil
        /// The door it comes through.
        var channel: EventChannel = .api
        /// Who must approve it, when several people must.
        var quorum: ApproverQuorum? = nil
    }

    struct Opened {
        let event: ApprovalEvent
        /// The secret that collects the outcome.
        let requesterToken: String
    }

    /// Stores the event (with the OpenID request `attachment` makes of it,
    /// in the same transaction), queues the pushes to the user's devices and
    /// wakes their inbox polls. It requires user verification if the
    /// request asks or the key's policy says so (``UserVerificationRule``).
    ///
    /// A requester (the API key id alone) asking for a user with no trusted
    /// device gets the same answer as for one with devices, and then never
    /// hears back: the event is stored, nobody is asked, and it expires. The
    /// key id ships inside apps, so a 409 would tell anyone which user ids
    /// have devices. A caller holding the secret (`holdsSecret`: the backend,
    /// even when it asks for a client under the requester limits) is told (409).
    func open(
        _ draft: Draft, by requester: PendingRequester, holdsSecret: Bool,
        attaching attachment: ((ApprovalEvent, _ requesterToken: String) -> PendingAttachment)? = nil
    ) async throws -> Opened {
        let key = draft.key
        // The request's quorum, else the one the app's policy asks of the
        // event name (not of a pairing, which the user's device approves).
        var quorum = draft.quorum
        if quorum == nil, draft.newDevice == nil {
            quorum = try await QuorumResolution(environment: environment).policy(
                for: draft.name, requester: draft.user, key: key)
        }
        let now = environment.now()
        // The user's devices and recent rejections in one read (one
        // statement on PostgreSQL), whichever of them this event needs.
        let (userDevices, rejected) = try await environment.store.devicesAndRejections(
            issuer: key.id, clientUserID: draft.user, rejectedSince: now - MatchNumberRule.window)
        let devices: [TrustedDevice]
        if let quorum {
            devices = try await approverDevices(quorum, requester: draft.user, key: key)
        } else {
            devices = userDevices
            guard !RequesterPolicy.tellsNoDevice(devices, callerHoldsSecret: holdsSecret) else {
                throw APIError.noTrustedDevice
            }
        }
        let requesterToken = SecretToken.generate(bytes: 32)
        let matchNumber: String?
        if draft.newDevice != nil {
            matchNumber = ApprovalEvent.newPairingCode()
        } else if !draft.numberMatching {
            matchNumber = nil
        } else {
            matchNumber = ApprovalEvent.newMatchNumber(digits: MatchNumberRule.digits(rejectedRecently: rejected))
        }
        let requiresUserVerification = UserVerificationRule.requires(
            key: key.userVerification, requested: draft.userVerification)
        if requiresUserVerification { _ = try environment.relyingParty() }
        var event = ApprovalEvent.pending(
            issuer: key.id, user: draft.user, name: draft.name, ip: draft.ip, location: draft.location,
            details: draft.details, requesterName: draft.requesterName, matchNumber: matchNumber,
            requesterTokenDigest: SecretToken.digest(requesterToken), newDevice: draft.newDevice, now: now,
            window: draft.window ?? environment.policy.window, channel: draft.channel)
        event.userVerification = requiresUserVerification
        event.quorum = quorum
        // The user's devices hear of it by push, if they asked to; the
        // messages commit with the event and go out after the answer.
        let pushes =
            environment.push == nil
            ? [] : WebPushDelivery.messages(for: event, app: key.name, devices: devices, now: now)
        try await environment.store.insertPendingEvent(
            event, by: requester, limits: draft.limits ?? environment.policy.pendingLimits, announcing: pushes,
            attached: attachment?(event, requesterToken), now: now)
        EventTransitions(environment: environment).created(event)
        if !pushes.isEmpty {
            environment.hub.notify(WakeKey.outbox)
            environment.metrics.queued(pushes)
        }
        return Opened(event: event, requesterToken: requesterToken)
    }

    /// The devices of a quorum's approvers that can answer (the backend
    /// asking is told, 409, when fewer of them have one than must approve).
    private func approverDevices(_ quorum: ApproverQuorum, requester: String, key: APIKey) async throws
        -> [TrustedDevice]
    {
        var devices: [TrustedDevice] = []
        var equipped = 0
        for user in quorum.approvers(requester: requester) {
            let usable = try await environment.store.devices(issuer: key.id, clientUserID: user).filter {
                $0.revokedAt == nil && $0.suspendedAt == nil
            }
            if !usable.isEmpty { equipped += 1 }
            devices += usable
        }
        guard equipped >= quorum.requiredApprovals else {
            throw APIError.conflict(
                .tooFewApprovers,
                "\(quorum.requiredApprovals) approvals are required but only \(equipped) of the approvers have a "
                    + "trusted device")
        }
        return devices
    }
}
