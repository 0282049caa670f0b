public import CountersignCore
public import Foundation

// The records the store takes and gives back, beside its protocol.

/// A counted code attempt.
public struct CodeAttempt: Sendable, Equatable {
    /// Attempts the event takes after this one; nil without an event.
    public var eventAttemptsLeft: Int?
    /// The user's consecutive failures, this attempt included.
    public var consecutiveFailures: Int

    public init(eventAttemptsLeft: Int?, consecutiveFailures: Int) {
        self.eventAttemptsLeft = eventAttemptsLeft
        self.consecutiveFailures = consecutiveFailures
    }
}

/// A decision as the store records it.
public struct RecordedDecision: Sendable, Equatable {
    /// `approved` or `rejected`.
    public var status: EventStatus
    /// The deciding device.
    public var deviceID: String
    /// The device's JWS, verbatim.
    public var jws: String?
    /// A device an approval adds to the user (pairing), in the same
    /// transaction; the deciding device is recorded as its author.
    public var enrolls: TrustedDevice?
    /// The decision's client address, for the audit log.
    public var ip: String
    /// The decision's own id, recorded as used in the same write.
    public var spends: SpentProofID?
    /// The passkey assertion sent with the decision, kept with the event.
    public var assertion: PasskeyAssertion?
    /// The passkey's counter in that assertion, kept on the device in the
    /// same write, which is refused (`conflict`) if the device's passkey
    /// is another by now or its counter went past this one.
    public var signCount: UInt32?

    public init(
        status: EventStatus, deviceID: String, jws: String?, enrolls: TrustedDevice? = nil, ip: String = "",
        spends: SpentProofID? = nil, assertion: PasskeyAssertion? = nil, signCount: UInt32? = nil
    ) {
        self.status = status
        self.deviceID = deviceID
        self.jws = jws
        self.enrolls = enrolls
        self.ip = ip
        self.spends = spends
        self.assertion = assertion
        self.signCount = signCount
    }
}

/// A passkey assertion's counter, kept on its device with the decision it
/// came with.
public struct PasskeyUse: Sendable, Equatable {
    public var credentialID: String
    public var signCount: UInt32

    public init(credentialID: String, signCount: UInt32) {
        self.credentialID = credentialID
        self.signCount = signCount
    }
}

/// A proof's or decision's id (`jti`) as the replay cache keeps it: good
/// once per device, remembered until `expiresAt`.
public struct SpentProofID: Sendable, Equatable {
    public var jti: String
    public var deviceID: String
    public var expiresAt: Date

    public init(jti: String, deviceID: String, expiresAt: Date) {
        self.jti = jti
        self.deviceID = deviceID
        self.expiresAt = expiresAt
    }
}

/// A poll of a CIBA request: what ``CIBAPollRule`` decided, and the event
/// as it stood in the transaction that decided it.
public struct CIBAPoll: Sendable {
    public let outcome: CIBAPollRule.Outcome
    public let event: ApprovalEvent

    public init(outcome: CIBAPollRule.Outcome, event: ApprovalEvent) {
        self.outcome = outcome
        self.event = event
    }
}
