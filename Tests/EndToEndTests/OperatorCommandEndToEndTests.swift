import Foundation
import Testing

/// The console's operators, named on the host, and the audit log that
/// records each change, exported as JSON lines while the broker runs.
@Suite("end to end: operators and the audit log on the command line")
struct OperatorCommandEndToEndTests {
    /// `device-broker ARGUMENTS` on the broker's store: exit status and output.
    func broker(_ broker: LiveBroker, _ arguments: [String]) async throws -> (Int32, String) {
        let process = try RunningProcess("device-broker", arguments + broker.storeArguments)
        return (try await process.exitCode(timeout: .seconds(120)), process.text)
    }

    @Test("operator add, list and remove, each once; audit export gives every change as a JSON line, paged by id")
    func operators() async throws {
        let live = try await LiveBroker.start()
        defer { live.stop() }
        #expect(try await broker(live, ["operator", "list"]).1.contains("No operators"))
        #expect(try await broker(live, ["operator", "add", "alice"]).0 == 0)
        #expect(try await broker(live, ["operator", "add", "bob"]).0 == 0)
        let enroll = try await broker(live, ["operator", "enroll", "alice"])
        #expect(enroll.0 == 0 && enroll.1.contains("--token et_"), "\(enroll.1)")
        let notOperator = try await broker(live, ["operator", "enroll", "carol"])
        #expect(notOperator.0 != 0 && notOperator.1.contains("carol is no operator"), "\(notOperator.1)")
        let again = try await broker(live, ["operator", "add", "alice"])
        #expect(again.0 != 0 && again.1.contains("alice is an operator already"), "\(again.1)")
        let bad = try await broker(live, ["operator", "add", "a/b"])
        #expect(bad.0 != 0 && bad.1.contains("not a valid operator name"), "\(bad.1)")
        #expect(try await broker(live, ["operator", "remove", "bob"]).0 == 0)
        let gone = try await broker(live, ["operator", "remove", "bob"])
        #expect(gone.0 != 0 && gone.1.contains("bob is no operator"), "\(gone.1)")
        let listed = try await broker(live, ["operator", "list"]).1
        #expect(listed.contains("alice") && !listed.contains("bob"), "\(listed)")

        let (status, exported) = try await broker(live, ["audit", "export"])
        #expect(status == 0, "\(exported)")
        let lines = exported.split(separator: "\n").map {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.count == 6 && lines.allSatisfy { $0 != nil }, "one JSON object per line:\n\(exported)")
        // Each add also issues the operator's first enrollment token; enroll issues another.
        #expect(
            lines.map { $0?["action"] as? String } == [
                "operator.added", "enrollment.issued", "operator.added", "enrollment.issued", "enrollment.issued",
                "operator.removed",
            ])
        #expect(lines.map { $0?["target"] as? String } == ["alice", "alice", "bob", "bob", "alice", "bob"])
        #expect(lines.allSatisfy { $0?["actor"] as? String == "host" && $0?["at"] is String })
        // Every field the docs list on every line: the host has no address.
        #expect(lines.allSatisfy { $0?["ip"] is NSNull && $0?.keys.count == 6 }, "\(exported)")
        let firstID = try #require(lines.first??["id"] as? Int)
        let after = try await broker(live, ["audit", "export", "--after", String(firstID)]).1
        #expect(after.split(separator: "\n").count == 5, "only what is new:\n\(after)")
    }
}
