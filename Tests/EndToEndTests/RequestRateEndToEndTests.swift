import CountersignClient
import CountersignCore
import CountersignPostgresTesting
import Foundation
import Testing

/// Requesters' hourly limits, counted in the store: two instances on one
/// PostgreSQL database share them.
@Suite("end to end: request rates across instances")
struct RequestRateEndToEndTests {
    @Test("two instances on PostgreSQL: the sixth login for a user in the hour is refused by either, with Retry-After")
    func sharedAcrossInstances() async throws {
        let database = try await TestPostgres.createDatabase()
        let arguments = ["--max-requests-per-user", "5"]
        let a = try await LiveBroker.start(arguments: arguments, database: database)
        let b = try await a.startInstance(arguments: arguments)
        _ = try await a.enrollDevice()
        let clients = [a, b].map { CountersignClient(broker: $0.url, apiKeyID: $0.apiKeyID) }
        for index in 0..<5 {
            // Withdrawn at once: only the hourly rate counts them.
            let client = clients[index % 2]
            let ticket = try await client.requestLogin(user: "alice", requesterName: "machine-\(index)")
            _ = try await client.withdraw(ticket)
        }
        for client in clients {
            do {
                _ = try await client.requestLogin(user: "alice", requesterName: "one-too-many")
                Issue.record("a sixth login was taken")
            } catch let error as CountersignError {
                #expect(error.status == 429 && error.code == "too_many_pending", "\(error)")
                #expect((error.retryAfter ?? 0) > 3000, "until the first ages out of the hour: \(error)")
            }
        }
        // Another user, and the backend, are not held by alice's rate.
        _ = try await a.enrollDevice(user: "bob")
        _ = try await clients[1].requestLogin(user: "bob", requesterName: "machine")
        _ = try await b.backend.requestApproval(user: "alice")
        a.stop()
        b.stop()
        try await TestPostgres.dropDatabase(database)
    }
}
