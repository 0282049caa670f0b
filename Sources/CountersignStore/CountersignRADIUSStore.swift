public import CountersignCore
import Foundation

/// The RADIUS clients (NAS) the broker answers, kept in the store so that
/// every instance knows them. Part of every ``CountersignStore``; each
/// change writes its audit record in the same transaction.
public protocol CountersignRADIUSStore: Sendable {
    /// Adds a client: `alreadyExists` for a name taken, `notFound` for an
    /// unknown or revoked API key; nothing written then.
    func insertRADIUSClient(_ client: RADIUSClient, audit record: AuditRecord) async throws
    /// Every client, by name.
    func radiusClients() async throws -> [RADIUSClient]
    /// Writes a client's address range, secret, mode and
    /// Message-Authenticator rule as given: `notFound` for an unknown name.
    func updateRADIUSClient(_ client: RADIUSClient, audit record: AuditRecord) async throws
    /// Removes a client: `notFound` for an unknown name.
    func deleteRADIUSClient(name: String, audit record: AuditRecord) async throws
}
