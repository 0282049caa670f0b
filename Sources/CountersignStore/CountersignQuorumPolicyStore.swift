public import CountersignCore
import Foundation

/// The apps' rules that events of a type need several approvers (``QuorumPolicy``).
public protocol CountersignQuorumPolicyStore: Sendable {
    /// An app's policies, by event name.
    func quorumPolicies(issuer: String) async throws -> [QuorumPolicy]
    /// An app's policy for one event name, or nil.
    func quorumPolicy(issuer: String, event: String) async throws -> QuorumPolicy?
    /// Sets the app's policy for its event name, replacing any; returns
    /// whether it was new. `notFound` for an unknown or revoked API key.
    @discardableResult
    func putQuorumPolicy(_ policy: QuorumPolicy) async throws -> Bool
    /// Deletes an app's policy for an event name; `notFound` without one.
    func deleteQuorumPolicy(issuer: String, event: String) async throws
}
