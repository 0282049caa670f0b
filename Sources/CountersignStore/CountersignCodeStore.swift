public import CountersignCore
public import Foundation

/// A user's TOTP codes and recovery codes, and the enrollment a recovery
/// code allows. Part of every ``CountersignStore``.
public protocol CountersignCodeStore: Sendable {
    /// Stores a device's sealed TOTP secret, once: `conflict` if the device
    /// has one already or is revoked, `notFound` for an unknown device.
    func setTOTPSecret(_ sealed: Data, deviceID: String) async throws

    /// The updater of a user's TOTP codes (a code attempt counted, a right
    /// code accepted): a change decided by a rule above the store
    /// (``CodeLimits``), written once for every store.
    ///
    /// In one write transaction, after every other change of this user's
    /// codes (PostgreSQL takes a lock on the user, then the device's and the
    /// event's rows `FOR UPDATE`; SQLite has one writer): reads the user's
    /// failures (``CodeFailures/none`` when none are kept), the event
    /// `eventID` and the device `deviceID` (each nil if not asked for or not
    /// there), hands them to `change`, and writes what it returns: the
    /// failures (forgotten when ``CodeFailures/none``), the event if given
    /// (the columns ``CountersignStore/updateEvent(id:spending:now:_:)`` writes, with what
    /// every change of an event writes when it leaves `pending`), the
    /// device's accepted step if given, and the notices. Whatever `change`
    /// throws leaves everything as it was and reaches the caller as thrown;
    /// `change` runs once. Returns what `change` said.
    func updateCodes<Outcome: Sendable>(
        issuer: String, clientUserID: String, eventID: String?, deviceID: String?, now: Date,
        _ change: @escaping @Sendable (CodeState) throws -> (CodeChange, Outcome)
    ) async throws -> Outcome

    /// Replaces all of a user's recovery codes with new ones (their digests).
    func replaceRecoveryCodes(_ digests: [Data], issuer: String, clientUserID: String, now: Date) async throws
    /// How many of a user's recovery codes are unused.
    func recoveryCodesLeft(issuer: String, clientUserID: String) async throws -> Int
    /// Enrolls `device` by using up the recovery code with this digest, in
    /// one transaction: `notFound` unless an unused code of the device's
    /// user has it (nothing changes); `alreadyExists` for a key that is
    /// enrolled (the code stays usable). Recorded in the audit log with
    /// `author`.
    func enrollDevice(_ device: TrustedDevice, consumingRecoveryCode digest: Data, author: ChangeAuthor, now: Date)
        async throws
}
