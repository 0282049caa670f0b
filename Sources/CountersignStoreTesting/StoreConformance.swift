import CountersignCore
public import CountersignStore
import Foundation

/// The one conformance suite every ``CountersignStore`` runs, unchanged.
///
/// A test target runs each case against a fresh, empty store:
///
///     @Test(arguments: StoreConformance.cases)
///     func conformance(_ check: StoreConformance.Case) async throws {
///         try await check.run(makeEmptyStore())
///     }
public enum StoreConformance {
    /// One named check of the contract.
    public struct Case: Sendable, CustomStringConvertible {
        /// What the check covers.
        public let name: String
        let body: @Sendable (any CountersignStore) async throws -> Void

        /// Runs the check against an empty store; throws on a violation.
        public func run(_ store: any CountersignStore) async throws { try await body(store) }
        public var description: String { name }
    }

    /// Every check of the contract.
    public static let cases: [Case] =
        keyCases + deviceCases + lifecycleCases + eventCases + decisionCases
        + verificationCases + codeCases + outboxCases + webhookCases + fraudCases + cibaCases + consoleCases
        + consoleSearchCases + consoleSessionCases + consoleWatchCases + pagingCases + openIDCases + updaterCases
        + radiusCases + directoryCases + invitationCases + quorumCases + approverGroupCases + quorumPolicyCases
}
