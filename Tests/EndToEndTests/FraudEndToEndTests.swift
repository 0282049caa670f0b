import CountersignClient
import CountersignCore
import Foundation
import Testing

/// A prompt-bombed user answers "this wasn't me", with real broker, agent
/// and webhook receiver processes.
@Suite("end to end: this wasn't me")
struct FraudEndToEndTests {
    @Test(
        "--report-fraud rejects every waiting login, refuses new ones (exit 6) until the protection ends, lets the backend ask, and tells the app"
    )
    func reportFraud() async throws {
        let (broker, receiver, _) = try await WebhookEndToEndTests.setUp(
            types: ["fraud.reported"], device: false, arguments: ["--fraud-protection", "40s"])
        defer {
            broker.stop()
            receiver.stop()
        }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let (bombed, bombedID, _) = try await broker.startLogin(
            machine: try temporaryDirectory("machine-B").appendingPathComponent("countersign"), name: "attacker-1")
        let (other, otherID, _) = try await broker.startLogin(
            machine: try temporaryDirectory("machine-C").appendingPathComponent("countersign"), name: "attacker-2")

        let report = try broker.agent(["approve", "--event", bombedID, "--report-fraud"], configDirectory: laptop)
        #expect(try await report.exitCode() == 0, "\(report.text)")
        #expect(report.text.contains("Rejected and reported as not yours"), "\(report.text)")
        #expect(try await bombed.exitCode() == 3 && bombed.text.contains("said this request was not theirs"))
        #expect(try await other.exitCode() == 3, "\(other.text)")
        #expect(other.text.contains("reported another request as not theirs"), "\(other.text)")

        // A new login is refused while the protection lasts; the backend is not.
        let refused = try broker.agent(
            ["login", "--name", "attacker-3"],
            configDirectory: try temporaryDirectory("machine-D").appendingPathComponent("countersign"))
        #expect(try await refused.exitCode() == 6, "\(refused.text)")
        #expect(refused.text.contains("answered a recent request with \"this wasn't me\""), "\(refused.text)")
        let transaction = try await broker.backend.requestApproval(user: "alice", details: "Pay 10 EUR")
        #expect(transaction.event.status == .pending)

        let received = try await receiver.waitUntil("the fraud report") { !$0.isEmpty }
        #expect(received[0].verified && received[0].body?.type == "fraud.reported")
        let data = try #require(received[0].raw.data(using: .utf8))
        struct Report: Decodable {
            struct Data: Decodable {
                struct Reported: Decodable { let ID: String }
                let reported: Reported
                let also_rejected: [String]
                let client_user_id: String
            }
            let data: Data
        }
        let body = try JSONDecoder().decode(Report.self, from: data)
        #expect(body.data.reported.ID == bombedID && body.data.also_rejected == [otherID])

        // Once the protection ends, logins are asked for again.
        let deadline = ContinuousClock.now + .seconds(150)
        var asked = false
        while !asked, ContinuousClock.now < deadline {
            try await Task.sleep(for: .seconds(1))
            let login = try broker.agent(
                ["login", "--name", "later"],
                configDirectory: try temporaryDirectory("machine-E").appendingPathComponent("countersign"))
            asked = (try? await login.waitFor(#"Login request (ev_[A-Za-z0-9_-]+) sent"#, timeout: .seconds(30))) != nil
            login.stop()
        }
        #expect(asked, "a login is asked for after the protection")
    }
}
