public import CountersignCore
import Foundation

/// The enrollment links sent by email (``Invitation``). Part of every
/// ``CountersignStore``.
public protocol CountersignInvitationStore: Sendable {
    /// Invitations newest first, with their mail's state and whether the
    /// user enrolled since, as `query` asks.
    func invitations(_ query: InvitationQuery) async throws -> [InvitationRecord]
    /// The invitation with this id, or nil.
    func invitation(id: String) async throws -> InvitationRecord?

    /// The updater of one user's invitations at one app (a change decided
    /// by ``InvitationRules`` above the store, written once for every
    /// store).
    ///
    /// In one write transaction, after every other change of this user's
    /// invitations (PostgreSQL locks them and the user's devices at the app
    /// `FOR UPDATE`; SQLite has one writer): reads their invitations not
    /// withdrawn, their devices at the app and their directory entry, hands
    /// them to `change`, and writes what it returns: the withdrawn ones
    /// marked, their enrollment tokens deleted and their queued mail
    /// cancelled; the new invitation, its token and its mail; the audit
    /// line. Whatever `change` throws leaves everything as it was; `change`
    /// runs once.
    func updateInvitations(
        issuer: String, clientUserID: String,
        _ change: @escaping @Sendable (InvitationUserState) throws -> InvitationChange
    ) async throws -> InvitationChange
}
