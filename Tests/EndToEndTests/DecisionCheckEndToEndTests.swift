import CountersignClient
import CountersignCore
import Foundation
import Testing

/// A backend checks an approval with keys it pinned itself, through the
/// SDK and through an independent Python script, and catches an event
/// edited in the broker's database, which the broker's own token does not.
@Suite("end to end: checking a decision without trusting the broker", .serialized)
struct DecisionCheckEndToEndTests {
    func python(_ event: EventDocument, keys: URL, app: String, broker: String) async throws -> (Int32, String) {
        let file = try temporaryDirectory("decision-check").appendingPathComponent("event.json")
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try WireCoding.encoder().encode(event).write(to: file)
        let script = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", scriptsDirectory.appendingPathComponent("verify-decision.py").path, file.path, keys.path,
                app, broker,
            ])
        return (try await script.exitCode(), script.text)
    }

    @Test("an approval checks out against pinned keys; after its details are edited in the database it does not")
    func editedInDatabase() async throws {
        var broker = try await LiveBroker.start()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        // Pinned when the device enrolled, as the devices API showed it then.
        let devices = try await broker.backend.devices(user: "alice")
        let keys = try temporaryDirectory("pinned").appendingPathComponent("devices.json")
        try FileManager.default.createDirectory(
            at: keys.deletingLastPathComponent(), withIntermediateDirectories: true)
        try WireCoding.encoder().encode(["devices": devices]).write(to: keys)
        let pinned = devices.map(\.publicKey)

        let ticket = try await broker.backend.requestApproval(user: "alice", details: "Pay 10.00 EUR to ACME")
        let approve = try broker.agent(
            ["approve", "--event", ticket.event.ID, "--yes", "--match", try #require(ticket.matchNumber)],
            configDirectory: laptop)
        #expect(try await approve.exitCode() == 0, "\(approve.text)")

        let approved = try await broker.backend.event(id: ticket.event.ID)
        #expect(approved.status == .approved)
        let claims = try await broker.backend.verifyDecision(of: approved, app: "demo", pinnedKeys: pinned)
        #expect(claims.decision == .approve && claims.evt == ticket.event.ID)
        let (status, text) = try await python(approved, keys: keys, app: "demo", broker: broker.url)
        #expect(status == 0, "\(text)")
        #expect(text.contains(#""decision": "approve""#))

        // The agent addressed its decision to 127.0.0.1; a broker on loopback
        // is the same broker at localhost, where its web approver is linked.
        // Another port is another broker.
        let local = broker.url.replacingOccurrences(of: "//127.0.0.1:", with: "//localhost:")
        let (localStatus, localText) = try await python(approved, keys: keys, app: "demo", broker: local)
        #expect(localStatus == 0, "\(localText)")
        let atLocal = try await DecisionProof.check(storedIn: approved, app: "demo", pinnedKeys: pinned, broker: local)
        #expect(atLocal.decision == .approve)
        await #expect(throws: ProtocolError(.wrongAudience, "")) {
            try await DecisionProof.check(
                storedIn: approved, app: "demo", pinnedKeys: pinned, broker: "http://localhost:1")
        }
        let (otherStatus, otherText) = try await python(
            approved, keys: keys, app: "demo", broker: "http://localhost:1")
        #expect(otherStatus != 0 && otherText.contains("another broker"), "\(otherText)")

        // Keys the backend did not pin, or another app's name, prove nothing.
        _ = try await broker.enrollDevice(user: "bob")
        let bobs = try await broker.backend.devices(user: "bob").map(\.publicKey)
        await #expect(throws: ProtocolError(.wrongDevice, "")) {
            try await broker.backend.verifyDecision(of: approved, app: "demo", pinnedKeys: bobs)
        }
        await #expect(throws: ProtocolError(.wrongDisplay, "")) {
            try await broker.backend.verifyDecision(of: approved, app: "Your Bank", pinnedKeys: pinned)
        }

        // Someone with the database turns 10 EUR into 10000 EUR.
        broker.stop()
        let edit = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", "-c",
                """
                import sqlite3, sys
                with sqlite3.connect(sys.argv[1]) as db:
                    db.execute("UPDATE events SET details = 'Pay 10000.00 EUR to ACME' WHERE id = ?", (sys.argv[2],))
                """,
                broker.dataDirectory.appendingPathComponent("countersign.sqlite").path, ticket.event.ID,
            ])
        #expect(try await edit.exitCode() == 0, "\(edit.text)")
        broker = try await broker.restart()

        let edited = try await broker.backend.event(id: ticket.event.ID)
        #expect(edited.details == "Pay 10000.00 EUR to ACME" && edited.status == .approved)
        // The broker signs what it holds: its token still verifies.
        let token = try #require(edited.signature)
        let tokenClaims = try await BrokerTokenVerifier.fetch(broker: broker.url).verifyEventToken(
            token, apiKeyID: broker.apiKeyID)
        #expect(tokenClaims.approved)
        // No device signed these words.
        await #expect(throws: ProtocolError(.wrongDisplay, "")) {
            try await broker.backend.verifyDecision(of: edited, app: "demo", pinnedKeys: pinned)
        }
        let (editedStatus, editedText) = try await python(edited, keys: keys, app: "demo", broker: broker.url)
        #expect(editedStatus == 1, "\(editedText)")
        #expect(editedText.contains("not what the approver was shown"))
    }
}
