import CountersignClient
import CountersignCore
import Crypto
import Foundation
import Testing

/// Running the broker: shutdown, health, metrics, backups, keys.
@Suite("end to end: operating the broker", .serialized)
struct OperationsEndToEndTests {
    @Test("SIGTERM: held long-polls are answered at once with the current state, and the broker exits 0")
    func gracefulShutdown() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let device = DeviceCredential(
            broker: broker.url, apiKeyID: broker.apiKeyID, clientUserID: "alice",
            privateKey: P256.Signing.PrivateKey(), name: "laptop")
        let token = try await broker.backend.createEnrollmentToken(user: "alice").token
        let client = CountersignClient(for: device)
        _ = try await client.enroll(device, enrollmentToken: token)
        let ticket = try await client.requestLogin(user: "alice", requesterName: "new-machine")
        let requester = Task {
            try await client.poll(eventID: ticket.event.ID, requesterToken: ticket.requesterToken!, wait: 25)
        }
        let other = DeviceCredential(
            broker: broker.url, apiKeyID: broker.apiKeyID, clientUserID: "bob", privateKey: P256.Signing.PrivateKey(),
            name: "phone")
        _ = try await client.enroll(
            other, enrollmentToken: try await broker.backend.createEnrollmentToken(user: "bob").token)
        let inbox = Task { try await client.inbox(other, wait: 25) }
        try await Task.sleep(for: .milliseconds(500))

        let signalled = ContinuousClock.now
        kill(broker.process.process.processIdentifier, SIGTERM)
        let event = try await requester.value
        #expect(event.status == .pending, "answered with the state as it is; the client polls again elsewhere")
        #expect(try await inbox.value.isEmpty)
        #expect(ContinuousClock.now - signalled < .seconds(3), "not held to the end of the 25 s wait")
        #expect(try await broker.process.exitCode(timeout: .seconds(10)) == 0, "\(broker.process.text)")
        print("graceful shutdown with two held long-polls: \(ContinuousClock.now - signalled)")
    }
}
