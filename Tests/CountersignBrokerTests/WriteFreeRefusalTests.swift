import CountersignBroker
import CountersignCore
import Foundation
import GRDB
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// A stranger's refused request costs the store nothing: everything that
/// can be checked without a write is checked first. The probe is SQLite's
/// `data_version`, which changes for a connection whenever another one
/// commits to the file.
@Suite("refused requests write nothing")
struct WriteFreeRefusalTests {
    /// Whether anyone committed to the broker's database while `body` ran.
    func committed(_ broker: TestBroker, during body: () async throws -> Void) async throws -> Bool {
        let probe = try DatabaseQueue(path: broker.databasePath)
        let before = try await probe.read { try Int.fetchOne($0, sql: "PRAGMA data_version") }
        try await body()
        let after = try await probe.read { try Int.fetchOne($0, sql: "PRAGMA data_version") }
        return before != after
    }

    @Test(
        "enrollments with fresh keys and bogus tokens or recovery codes, and refused pairings, write nothing; an accepted enrollment does"
    )
    func strangers() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            func enroll(_ credential: [String: AnyEncodable], device: TestDevice = TestDevice()) async throws
                -> HTTPResponse.Status
            {
                var headers = try await device.proofHeaders(.post, "/api/v1/enrollments", now: broker.clock.now)
                headers[HTTPField.Name("API_KEY_ID")!] = broker.apiKeyID
                var body: [String: AnyEncodable] = [
                    "client_user_id": .init("alice"), "public_key": .init(device.jwk), "name": .init("laptop"),
                ]
                body.merge(credential) { $1 }
                return try await client.execute(
                    uri: "/api/v1/enrollments", method: .post, headers: headers, body: json(body)
                ) { $0.status }
            }
            let pairing = PairingTests()
            var statuses: [HTTPResponse.Status] = []
            let wrote = try await committed(broker) {
                for index in 0..<20 {
                    statuses.append(try await enroll(["enrollment_token": .init("et_bogus\(index)")]))
                }
                statuses.append(try await enroll(["recovery_code": .init("7KQ2M-0ABCD-EFGHJ-KMNPQ-RSTVW")]))
                // A pairing for a key that is enrolled already, and one signed by another key.
                statuses.append(try await pairing.requestPairing(client, broker, newcomer: alice.device).status)
                statuses.append(
                    try await pairing.requestPairing(client, broker, newcomer: TestDevice(), proofKey: TestDevice())
                        .status)
            }
            #expect(statuses == Array(repeating: .forbidden, count: 21) + [.conflict, .unauthorized])
            #expect(!wrote, "a refused request wrote to the database")

            // The probe sees a write: an accepted enrollment.
            let token = try await broker.enrollmentToken(client, user: "bob")
            var status = HTTPResponse.Status.ok
            let enrolled = try await committed(broker) {
                status = try await enroll(["client_user_id": .init("bob"), "enrollment_token": .init(token)])
            }
            #expect(status == .created && enrolled)
        }
    }
}
