public import CountersignCore
import Foundation

/// An event's quorum and approvals as every store keeps them: JSON text in
/// the event's row, as the API writes them, nil for an event without a
/// quorum.
public enum QuorumColumns {
    public static func quorum(of event: ApprovalEvent) throws -> String? {
        try event.quorum.map { String(decoding: try WireCoding.encoder().encode($0), as: UTF8.self) }
    }

    public static func approvals(of event: ApprovalEvent) throws -> String? {
        guard event.quorum != nil else { return nil }
        return String(decoding: try WireCoding.encoder().encode(event.approvals), as: UTF8.self)
    }

    public static func quorum(_ text: String?) throws -> ApproverQuorum? {
        try text.map { try WireCoding.decoder().decode(ApproverQuorum.self, from: Data($0.utf8)) }
    }

    public static func approvals(_ text: String?) throws -> [QuorumApproval] {
        try text.map { try WireCoding.decoder().decode([QuorumApproval].self, from: Data($0.utf8)) } ?? []
    }
}
