import CountersignBroker
import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@Suite("Recovery codes")
struct RecoveryCodeTests {
    @Test("codes are well formed, ≥ 64 bits, and typed loosely")
    func format() {
        let codes = (0..<200).map { _ in RecoveryCode.generate() }
        #expect(Set(codes).count == codes.count)
        for code in codes {
            #expect(code.count == 29 && code.split(separator: "-").map(\.count) == [5, 5, 5, 5, 5], "\(code)")
        }
        // 25 symbols of a 32-letter alphabet: 125 bits.
        #expect(25 * log2(32.0) >= 112)
        let code = codes[0]
        #expect(
            RecoveryCode.digest(code.lowercased().replacingOccurrences(of: "-", with: " ")) == RecoveryCode.digest(code)
        )
        #expect(
            RecoveryCode.normalize("OIL" + String(repeating: "0", count: 22)) == "011"
                + String(repeating: "0", count: 22))
        #expect(RecoveryCode.normalize(String(code.dropLast())) == nil, "too short")
        #expect(RecoveryCode.normalize(String(code.dropLast()) + "U") == nil, "U is not in the alphabet")
    }

    @Test("a recovery code enrolls a new device once; the broker keeps only digests; a new set replaces the old")
    func enroll() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let first = try await broker.createRecoveryCodes(client, alice.device)
            let codes = try await broker.createRecoveryCodes(client, alice.device)
            #expect(codes.count == 10)
            try await client.execute(
                uri: "/api/v1/recovery-codes", method: .get,
                headers: try await alice.device.proofHeaders(.get, "/api/v1/recovery-codes", now: broker.clock.now)
            ) { response in
                let status = try decode(RecoveryCodesDocument.self, response)
                #expect(status == RecoveryCodesDocument(codes: nil, remaining: 10), "a count, never the codes")
            }

            // Alice loses her only device.
            try await client.execute(
                uri: "/api/v1/users/alice/devices/\(alice.device.id)", method: .delete, headers: broker.backendHeaders
            ) { #expect($0.status == .ok) }
            try await broker.enrollWithRecoveryCode(client, first[0], user: "alice") {
                #expect($0.status == .forbidden && errorCode($0) == "invalid_recovery_code", "a replaced set is dead")
            }
            try await broker.enrollWithRecoveryCode(client, codes[0], user: "bob") {
                #expect(errorCode($0) == "invalid_recovery_code", "alice's code is not bob's")
            }
            let replacement = TestDevice()
            try await broker.enrollWithRecoveryCode(client, codes[0].lowercased(), user: "alice", device: replacement) {
                #expect($0.status == .created, "\(String(buffer: $0.body))")
            }
            try await broker.enrollWithRecoveryCode(client, codes[0], user: "alice") {
                #expect(errorCode($0) == "invalid_recovery_code", "each code works once")
            }
            try await broker.enrollWithRecoveryCode(client, "not a code", user: "alice") {
                #expect(errorCode($0) == "invalid_recovery_code")
            }
            try await client.execute(
                uri: "/api/v1/recovery-codes", method: .get,
                headers: try await replacement.proofHeaders(.get, "/api/v1/recovery-codes", now: broker.clock.now)
            ) { response in
                let status = try decode(RecoveryCodesDocument.self, response)
                #expect(status.remaining == 9)
            }
            let changes = try await broker.store.deviceChanges(issuer: broker.apiKeyID, clientUserID: "alice", limit: 1)
            #expect(changes.first?.deviceID == replacement.id && changes.first?.author.actor == "recovery_code")

            // The database (and its write-ahead log) hold digests, never a code.
            for file in [broker.databasePath, broker.databasePath + "-wal"] {
                let bytes = (try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data()
                for code in codes {
                    #expect(
                        bytes.range(of: Data(code.utf8)) == nil
                            && bytes.range(of: Data(RecoveryCode.normalize(code)!.utf8)) == nil)
                }
            }
            #expect(try await broker.store.recoveryCodesLeft(issuer: broker.apiKeyID, clientUserID: "alice") == 9)
        }
    }
}

extension TestBroker {
    func createRecoveryCodes(_ client: some TestClientProtocol, _ device: TestDevice) async throws -> [String] {
        try await client.execute(
            uri: "/api/v1/recovery-codes", method: .post,
            headers: try await device.proofHeaders(.post, "/api/v1/recovery-codes", now: clock.now)
        ) { response in
            #expect(response.status == .created)
            return try #require(try decode(RecoveryCodesDocument.self, response).codes)
        }
    }

    func enrollWithRecoveryCode(
        _ client: some TestClientProtocol, _ code: String, user: String, device: TestDevice = TestDevice(),
        _ check: @escaping (TestResponse) throws -> Void
    ) async throws {
        let body: [String: AnyEncodable] = [
            "client_user_id": .init(user), "recovery_code": .init(code), "public_key": .init(device.jwk),
            "name": .init("replacement"),
        ]
        var headers = try await device.proofHeaders(.post, "/api/v1/enrollments", now: clock.now)
        headers[HTTPField.Name("API_KEY_ID")!] = apiKeyID
        try await client.execute(
            uri: "/api/v1/enrollments", method: .post, headers: headers, body: json(body), testCallback: check)
    }
}
