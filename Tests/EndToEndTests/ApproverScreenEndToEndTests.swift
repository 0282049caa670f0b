import CountersignClient
import CountersignCore
import Foundation
import Testing

/// What a person at `device-agent approve` reads, whatever the broker
/// sends: a real agent in a real pseudo-terminal, its output interpreted by
/// a terminal emulator (scripts/terminal-screen.py, with pyte).
@Suite("end to end: the approver's screen")
struct ApproverScreenEndToEndTests {
    @Test(
        "fields planted in the broker's store with escape sequences, line breaks and a bidi override are shown as text and forge nothing"
    )
    func hostileFields() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machine = try await broker.enrollMachine(name: "laptop-A")
        let ticket = try await broker.backend.requestApproval(
            user: "alice", event: EventName.transaction, details: "Pay 100.00 EUR to ACME")
        let id = ticket.event.ID
        // The broker refuses such fields now; a broker of an older version,
        // or one whose store was written behind its back, may still send them.
        let database = broker.dataDirectory.appendingPathComponent("countersign.sqlite").path
        let plant = """
            UPDATE events SET
                details = 'Pay 100.00 EUR' || char(27) || '[2K' || char(13) || 'Pay 1.00 EUR',
                location = 'Berlin' || char(10) || '  event id:  ev_forged',
                requester_name = 'pc' || char(8238) || 'txt.exe',
                ip = '192.0.2.7' || char(27) || ']0;owned' || char(7)
            WHERE id = '\(id)'
            """
        let agent = Binaries.directory.appendingPathComponent("device-agent").path
        let run = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", scriptsDirectory.appendingPathComponent("terminal-screen.py").path,
                "--sql", database, plant,
                "--sql", database,
                "UPDATE api_keys SET name = 'demo' || char(27) || '[8m' WHERE id = '\(broker.apiKeyID)'",
                "--answer", "Approve this request? [y]es, [n]o, or [f] this wasn't me:", "n",
                "--", agent, "approve", "--event", id, "--timeout", "60", "--broker", broker.url,
                "--api-key", broker.apiKeyID, "--user", "alice", "--config-dir", machine.path,
            ])
        #expect(try await run.exitCode(timeout: .seconds(180)) == 0, "\(run.text)")
        let screen = try #require(run.text.firstMatch(of: /--- screen ---\n((?s).*)\n--- end ---/)?.output.1)
        let lines = screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        print("the approver's screen:\n\(screen)")

        #expect(lines.contains { $0.contains(#"Transaction to confirm for alice at demo\u{1B}[8m"#) }, "\(screen)")
        let details = lines.filter { $0.contains("details:") }
        #expect(details == [#"  details:   Pay 100.00 EUR\u{1B}[2K\u{D}Pay 1.00 EUR"#], "\(screen)")
        #expect(!lines.contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix("Pay 1.00") }, "\(screen)")
        let ids = lines.filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("event id:") }
        #expect(ids == ["  event id:  \(id)"], "no forged event id line: \(screen)")
        let from = try #require(lines.first { $0.hasPrefix("  from:") })
        #expect(from.contains(#"pc\u{202E}txt.exe"#), "\(from)")
        #expect(from.contains(#"192.0.2.7\u{1B}]0;owned\u{7}"#), "\(from)")
        #expect(from.contains(#"Berlin\u{A}  event id:  ev_forged"#), "\(from)")
        #expect(lines.contains("Rejected."), "\(screen)")
        #expect(try await broker.backend.event(id: id).status == .rejected)
    }
}
