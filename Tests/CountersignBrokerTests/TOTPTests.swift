import CountersignClient
import CountersignCore
import CountersignSQLite
import CountersignStore
import Crypto
import Foundation
import HTTPTypes
import HummingbirdOTP
import HummingbirdTesting
import NIOCore
import Testing

@testable import CountersignBroker

@Suite("TOTP codes")
struct TOTPTests {
    /// RFC 6238 Appendix B: the seeds are ASCII, 20/32/64 bytes for SHA-1/256/512.
    @Test(
        "RFC 6238 Appendix B vectors through HummingbirdOTP",
        arguments: [
            (59, "94287082", "46119246", "90693936"),
            (1_111_111_109, "07081804", "68084774", "25091201"),
            (1_111_111_111, "14050471", "67062674", "99943326"),
            (1_234_567_890, "89005924", "91819424", "93441116"),
            (2_000_000_000, "69279037", "90698825", "38618901"),
            (20_000_000_000, "65353130", "77737706", "47863826"),
        ] as [(Int, String, String, String)])
    func rfc6238(time: Int, sha1: String, sha256: String, sha512: String) {
        let seed = "12345678901234567890"
        let cases: [(String, OTPHashFunction, String)] = [
            (seed, .sha1, sha1),
            (seed + "123456789012", .sha256, sha256),
            (seed + seed + seed + "1234", .sha512, sha512),
        ]
        for (secret, hash, expected) in cases {
            let code = TOTP(secret: secret, length: 8, timeStep: 30, hashFunction: hash)
                .compute(date: Date(timeIntervalSince1970: Double(time)))
            #expect(String(format: "%08d", code) == expected, "\(hash) at T=\(time)")
        }
    }

    @Test("a sealed secret opens only with its key, for its device, unaltered")
    func vault() throws {
        let vault = TOTPVault(key: SymmetricKey(size: .bits256))
        let secret = TOTPSecret.generate()
        let sealed = try vault.seal(secret, deviceID: "dev-a")
        #expect(try vault.unseal(sealed, deviceID: "dev-a") == secret)
        #expect(!sealed.contains(Data(secret.value.utf8).prefix(8)), "never in the clear")
        #expect(throws: (any Error).self, "on another device's row") { try vault.unseal(sealed, deviceID: "dev-b") }
        #expect(throws: (any Error).self, "under another key") {
            try TOTPVault(key: SymmetricKey(size: .bits256)).unseal(sealed, deviceID: "dev-a")
        }
        var tampered = sealed
        tampered[tampered.count - 20] ^= 1
        #expect(throws: (any Error).self, "altered") { try vault.unseal(tampered, deviceID: "dev-a") }
    }

    @Test("a device's secret is made once; its code finishes a LOGIN once, signed as TOTP")
    func login() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let secret = try await broker.createTOTPSecret(client, alice.device)
            #expect(secret.otpauthURI.hasPrefix("otpauth://totp/demo:alice?secret="))
            #expect(secret.otpauthURI.contains("issuer=demo"))
            try await client.execute(
                uri: "/api/v1/devices/self/totp", method: .post,
                headers: try await alice.device.proofHeaders(.post, "/api/v1/devices/self/totp", now: broker.clock.now)
            ) { #expect(errorCode($0) == "totp_exists" && $0.status == .conflict) }
            #expect(try await broker.store.device(id: alice.device.id)?.sealedTOTPSecret != nil)
            for file in [broker.databasePath, broker.databasePath + "-wal"] {
                let bytes = (try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data()
                #expect(bytes.range(of: Data(secret.secret.value.utf8)) == nil, "the secret is sealed in \(file)")
            }

            let ticket = try await broker.requestLogin(client)
            let code = Self.code(secret.secret, at: broker.clock.now)
            let wrong = code == "000000" ? "111111" : "000000"
            try await broker.submitCode(client, ticket, wrong) {
                #expect($0.status == .unprocessableContent && errorCode($0) == "wrong_code")
                #expect(String(buffer: $0.body).contains("4 tries left"))
            }
            let approved = try await broker.submitCode(client, ticket, code) { response in
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                return try decode(EventDocument.self, response)
            }
            #expect(approved.status == .approved && approved.method == .totp && approved.decidedBy == alice.device.id)
            let verifier = try await BrokerTokenVerifier(
                jwksJSON: String(
                    decoding: try WireCoding.encoder().encode(broker.environment.keys.jwks), as: UTF8.self),
                issuer: TestBroker.origin)
            let claims = try await verifier.verifyEventToken(
                try #require(approved.signature), apiKeyID: broker.apiKeyID)
            #expect(claims.method == .totp && claims.approved)
            #expect(try await broker.poll(client, ticket).status == .approved, "the requester sees it")

            let again = try await broker.requestLogin(client)
            try await broker.submitCode(client, again, code) {
                #expect($0.status == .unprocessableContent && errorCode($0) == "code_used", "a code works once")
            }
            broker.clock.advance(by: 30)
            try await broker.submitCode(client, again, code) {
                #expect(errorCode($0) == "code_used", "also in the next step, where it is the previous one")
            }
            broker.clock.advance(by: 30)
            let later = try await broker.requestLogin(client)
            try await broker.submitCode(client, later, Self.code(secret.secret, at: broker.clock.now - 60)) {
                #expect(errorCode($0) == "wrong_code", "two steps back is too old")
            }
            try await broker.submitCode(client, later, Self.code(secret.secret, at: broker.clock.now + 30)) {
                #expect(errorCode($0) == "wrong_code", "the next step is not accepted")
            }
            try await broker.submitCode(client, later, Self.code(secret.secret, at: broker.clock.now - 30)) {
                #expect($0.status == .ok, "the previous step is: \(String(buffer: $0.body))")
            }
        }
    }

    @Test("a code typed after the window ran out unanswered records the LOGIN approved by TOTP, within a limit")
    func lateCode() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let secret = try await broker.createTOTPSecret(client, alice.device)
            let window = broker.environment.policy.window
            let late = try await broker.requestLogin(client)
            broker.clock.advance(by: window + 5)
            #expect(try await broker.poll(client, late).status == .expired, "nobody answered in time")
            let approved = try await broker.submitCode(client, late, Self.code(secret.secret, at: broker.clock.now)) {
                response in
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                return try decode(EventDocument.self, response)
            }
            #expect(approved.status == .approved && approved.method == .totp && approved.decidedBy == alice.device.id)
            #expect(approved.signature != nil, "with its event token")
            let read = try await broker.poll(client, late)
            #expect(read.status == .approved && read.method == .totp, "the requester and the backend read it so")

            broker.clock.advance(by: 30)
            let withdrawn = try await broker.requestLogin(client)
            try await client.execute(
                uri: "/api/v1/events/\(withdrawn.event.ID)", method: .delete,
                headers: [.authorization: "Bearer \(withdrawn.requesterToken!)"]
            ) { #expect($0.status == .ok) }
            try await broker.submitCode(client, withdrawn, Self.code(secret.secret, at: broker.clock.now)) {
                #expect($0.status == .gone && errorCode($0) == "withdrawn", "a withdrawn request takes no code")
            }

            let old = try await broker.requestLogin(client)
            broker.clock.advance(by: window + CodeLimits.lateCodeWindow)
            try await broker.submitCode(client, old, Self.code(secret.secret, at: broker.clock.now)) {
                #expect($0.status == .gone && errorCode($0) == "expired", "nor one that expired too long ago")
            }
            #expect(try await broker.poll(client, old).status == .expired)
        }
    }

    @Test("five wrong codes close an event to codes; it can still be approved on a device")
    func perEventLimit() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let secret = try await broker.createTOTPSecret(client, alice.device)
            let ticket = try await broker.requestLogin(client)
            let code = Self.code(secret.secret, at: broker.clock.now)
            let wrong = code == "000000" ? "111111" : "000000"
            for _ in 1...5 {
                try await broker.submitCode(client, ticket, wrong) { #expect(errorCode($0) == "wrong_code") }
            }
            try await broker.submitCode(client, ticket, code) {
                #expect($0.status == .tooManyRequests && errorCode($0) == "too_many_codes", "even the right one")
            }
            try await broker.submitCode(client, ticket, "12345") {
                #expect(errorCode($0) == "invalid_code", "malformed codes are refused up front")
            }
            let item = try #require(try await broker.inbox(client, alice.device).first)
            let decision = try await alice.device.decision(
                on: item, .approve, match: ticket.matchNumber, now: broker.clock.now)
            let response = try await broker.submit(client, eventID: ticket.event.ID, decision: decision)
            #expect(response.status == .ok, "the device still decides")
        }
    }

    @Test("consecutive failures lock the user out of codes, across events; then the lock-out doubles")
    func lockout() async throws {
        let broker = try await TestBroker(codeLimits: CodeLimits(perEvent: 5, lockoutAfter: 6, firstLockout: 60))
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let secret = try await broker.createTOTPSecret(client, alice.device)
            let code = { Self.code(secret.secret, at: broker.clock.now) }
            let wrong = { code() == "000000" ? "111111" : "000000" }
            for attempt in 1...6 {
                try await broker.verifyCode(client, user: "alice", wrong()) {
                    #expect(errorCode($0) == "wrong_code", "attempt \(attempt)")
                }
            }
            let ticket = try await broker.requestLogin(client)
            try await broker.submitCode(client, ticket, code()) {
                #expect($0.status == .tooManyRequests && errorCode($0) == "too_many_failures", "locked")
                #expect($0.headers[.retryAfter] == "60")
            }
            try await broker.verifyCode(client, user: "bob", wrong()) {
                #expect(errorCode($0) == "wrong_code", "another user is not locked out")
            }
            broker.clock.advance(by: 60)
            let second = try await broker.requestLogin(client)
            try await broker.submitCode(client, second, wrong()) { #expect(errorCode($0) == "wrong_code") }
            try await broker.submitCode(client, second, code()) {
                #expect($0.headers[.retryAfter] == "120", "the next lock-out is twice as long")
            }
            broker.clock.advance(by: 120)
            let fresh = try await broker.requestLogin(client)
            try await broker.submitCode(client, fresh, code()) { #expect($0.status == .ok) }
            broker.clock.advance(by: 30)
            try await broker.verifyCode(client, user: "alice", wrong()) {
                #expect(errorCode($0) == "wrong_code", "a right code cleared the failures")
            }
        }
    }

    @Test("a right code with a record leaves an approved LOGIN by TOTP; a wrong one none; a bad record costs nothing")
    func recordedLogin() async throws {
        let broker = try await TestBroker(codeLimits: CodeLimits(perEvent: 5, lockoutAfter: 2, firstLockout: 60))
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let secret = try await broker.createTOTPSecret(client, alice.device)
            let code = Self.code(secret.secret, at: broker.clock.now)
            let record = CodeRecord(
                details: "ssh as alice on web-1", requesterName: "web-1 (sshd)", ip: "::ffff:192.0.2.7")
            let wrong = CodeVerificationRequest(code: code == "000000" ? "111111" : "000000", record: record)
            let verify = { (body: CodeVerificationRequest, check: @escaping (TestResponse) throws -> Void) in
                try await client.execute(
                    uri: "/api/v1/users/alice/totp/verify", method: .post, headers: broker.backendHeaders,
                    body: try json(body), testCallback: check)
            }
            try await verify(wrong) { #expect(errorCode($0) == "wrong_code") }
            var bad = record
            bad.ip = "192.0.2.7\nforged line"
            try await verify(CodeVerificationRequest(code: code, record: bad)) {
                #expect($0.status == .badRequest, "\(String(buffer: $0.body))")
            }
            #expect(
                try await broker.store.events(
                    issuer: broker.apiKeyID, clientUserID: "alice", status: nil,
                    now: broker.clock.now, limit: 10
                ).isEmpty, "nothing recorded for a wrong code or a bad record")

            // The bad record was not counted: this is the second attempt, not the third that locks.
            var answer: CodeVerificationDocument?
            try await verify(CodeVerificationRequest(code: code, record: record)) {
                #expect($0.status == .ok, "\(String(buffer: $0.body))")
                answer = try decode(CodeVerificationDocument.self, $0)
            }
            let event = try #require(answer?.event)
            #expect(event.status == .approved && event.method == .totp && event.decidedBy == alice.device.id)
            #expect(event.event == EventName.login && event.ip == "192.0.2.7" && event.details == record.details)
            #expect(event.signature != nil, "signed, as any settled event")
            let stored = try await broker.store.events(
                issuer: broker.apiKeyID, clientUserID: "alice", status: .approved, now: broker.clock.now, limit: 10)
            #expect(stored.map(\.id) == [event.ID])
            let records = try await broker.store.decisionRecords(
                issuer: broker.apiKeyID, clientUserID: "alice", limit: 10)
            #expect(records.map(\.eventID) == [event.ID], "in the decision history too")
            try await client.execute(
                uri: "/api/v1/inbox", method: .get,
                headers: try await alice.device.proofHeaders(
                    .get, "/api/v1/inbox", now: broker.clock.now)
            ) { response in
                #expect(!String(buffer: response.body).contains(event.ID), "no device is shown it")
            }
        }
    }

    @Test("the backend verifies a code; a removed device's code, another requester and a TRANSACTION are refused")
    func backendAndRefusals() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let secret = try await broker.createTOTPSecret(client, alice.device)
            let result = try await broker.verifyCode(
                client, user: "alice", Self.code(secret.secret, at: broker.clock.now)
            ) { response in
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                return try decode(CodeVerificationDocument.self, response)
            }
            #expect(result == CodeVerificationDocument(valid: true, deviceID: alice.device.id, deviceName: "laptop"))
            try await broker.verifyCode(client, user: "mallory", Self.code(secret.secret, at: broker.clock.now + 30)) {
                #expect(errorCode($0) == "wrong_code", "alice's code is not mallory's")
            }
            try await client.execute(
                uri: "/api/v1/users/alice/totp/verify", method: .post, headers: broker.appHeaders,
                body: json(["code": "123456"])
            ) { #expect($0.status == .unauthorized, "the backend's secret key is needed") }

            _ = try await broker.enroll(client)  // a second device keeps the user able to log in
            try await client.execute(
                uri: "/api/v1/users/alice/devices/\(alice.device.id)", method: .delete, headers: broker.backendHeaders
            ) { #expect($0.status == .ok) }
            broker.clock.advance(by: 30)
            let ticket = try await broker.requestLogin(client)
            try await broker.submitCode(client, ticket, Self.code(secret.secret, at: broker.clock.now)) {
                #expect(errorCode($0) == "wrong_code", "a removed device's codes are worth nothing")
            }
            try await client.execute(
                uri: "/api/v1/events/\(ticket.event.ID)/code", method: .post,
                headers: [.authorization: "Bearer not-the-token", .contentType: "application/json"],
                body: json(["code": "123456"])
            ) { #expect($0.status == .notFound, "another requester's token does not reach the event") }

            let transaction = try await client.execute(
                uri: "/api/v1/events", method: .post, headers: broker.backendHeaders,
                body: json(["client_user_id": "alice", "event": "TRANSACTION", "details": "pay 10 EUR"])
            ) { try decode(EventTicket.self, $0) }
            try await client.execute(
                uri: "/api/v1/events/\(transaction.event.ID)/code", method: .post, headers: broker.backendHeaders,
                body: json(["code": "123456"])
            ) { #expect(errorCode($0) == "code_not_accepted", "a transaction is decided on a device") }
        }
    }

    @Test("a secret sealed under another key gives that device no codes and breaks no one else's")
    func foreignKey() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let secret = try await broker.createTOTPSecret(client, alice.device)
            let stray = try await broker.enroll(client)
            let straySecret = TOTPSecret.generate()
            try await broker.store.setTOTPSecret(
                try TOTPVault(key: SymmetricKey(size: .bits256)).seal(straySecret, deviceID: stray.device.id),
                deviceID: stray.device.id)
            try await broker.verifyCode(client, user: "alice", Self.code(straySecret, at: broker.clock.now)) {
                #expect(errorCode($0) == "wrong_code", "\(String(buffer: $0.body))")
            }
            try await broker.verifyCode(client, user: "alice", Self.code(secret.secret, at: broker.clock.now)) {
                #expect($0.status == .ok, "\(String(buffer: $0.body))")
            }
        }
    }

    @Test("a broker without a TOTP key says so and stores nothing")
    func unavailable() async throws {
        let broker = try await TestBroker(vault: nil)
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            try await client.execute(
                uri: "/api/v1/devices/self/totp", method: .post,
                headers: try await alice.device.proofHeaders(.post, "/api/v1/devices/self/totp", now: broker.clock.now)
            ) { #expect($0.status == .notImplemented && errorCode($0) == "totp_unavailable") }
            #expect(try await broker.store.device(id: alice.device.id)?.sealedTOTPSecret == nil)
            let ticket = try await broker.requestLogin(client)
            try await broker.submitCode(client, ticket, "123456") { #expect(errorCode($0) == "totp_unavailable") }
        }
    }

    static func code(_ secret: TOTPSecret, at date: Date) -> String {
        String(format: "%06d", TOTP(secret: secret.value).compute(date: date))
    }
}

extension TestBroker {
    func createTOTPSecret(_ client: some TestClientProtocol, _ device: TestDevice) async throws -> TOTPSecretDocument {
        try await client.execute(
            uri: "/api/v1/devices/self/totp", method: .post,
            headers: try await device.proofHeaders(.post, "/api/v1/devices/self/totp", now: clock.now)
        ) { response in
            #expect(response.status == .created, "totp: \(String(buffer: response.body))")
            return try decode(TOTPSecretDocument.self, response)
        }
    }

    @discardableResult
    func submitCode<T>(
        _ client: some TestClientProtocol, _ ticket: EventTicket, _ code: String,
        _ check: @escaping (TestResponse) throws -> T
    ) async throws -> T {
        try await client.execute(
            uri: "/api/v1/events/\(ticket.event.ID)/code", method: .post,
            headers: [.authorization: "Bearer \(ticket.requesterToken!)", .contentType: "application/json"],
            body: json(["code": code]), testCallback: check)
    }

    @discardableResult
    func verifyCode<T>(
        _ client: some TestClientProtocol, user: String, _ code: String, _ check: @escaping (TestResponse) throws -> T
    ) async throws -> T {
        try await client.execute(
            uri: "/api/v1/users/\(user)/totp/verify", method: .post, headers: backendHeaders,
            body: json(["code": code]), testCallback: check)
    }
}
