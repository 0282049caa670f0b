public import CountersignCore
import Foundation

/// The groups of people apps ask to approve their events (``ApproverGroup``).
public protocol CountersignApproverGroupStore: Sendable {
    /// An app's groups, by name.
    func approverGroups(issuer: String) async throws -> [ApproverGroup]
    /// One of an app's groups, or nil.
    func approverGroup(issuer: String, name: String) async throws -> ApproverGroup?
    /// Creates the group, or replaces the users of the app's group of that
    /// name; returns whether it was new. `notFound` for an unknown or
    /// revoked API key. Events made before keep the approvers they were
    /// made with.
    @discardableResult
    func putApproverGroup(_ group: ApproverGroup) async throws -> Bool
    /// Deletes one of an app's groups; `notFound` if it has none of that name.
    func deleteApproverGroup(issuer: String, name: String) async throws
}
