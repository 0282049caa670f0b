import CountersignBroker
import CountersignClient
import CountersignCore
import CountersignSQLite
import Foundation
import JWTKit
import Testing

@Suite("Signing-key rotation")
struct KeyRotationTests {
    @Test("a new key is published at once, signs after the JWKS cache time, and the old one leaves an hour later")
    func rotation() async throws {
        let broker = try await TestBroker()
        let keys = broker.environment.keys
        let first = keys.currentKeyID
        let event = ApprovalEvent(
            id: "ev_x", createdAt: broker.clock.now, updatedAt: broker.clock.now, issuer: broker.apiKeyID,
            clientUserID: "alice", name: "LOGIN", ip: "", location: "", method: .trustedDevice, storedStatus: .approved,
            expiresAt: broker.clock.now, details: nil, requesterName: nil, nonce: "n", matchNumber: nil,
            wrongMatches: 0, requesterTokenDigest: nil, decidedBy: nil, decidedAt: nil, decision: nil)
        let claims = EventTokenClaims(event: event, issuer: TestBroker.origin, now: broker.clock.now, lifetime: 300)
        let before = try await keys.sign(claims)

        broker.clock.advance(by: 10)
        let second = BrokerKeys.newKey(now: broker.clock.now)
        try await broker.store.insertSigningKey(second)
        try await keys.refresh(from: broker.store, now: broker.clock.now)
        #expect(keys.jwks.keys.map(\.kid) == [first, second.id], "published at once")
        #expect(keys.currentKeyID == first, "but not signing yet: caches may not have it")

        broker.clock.advance(by: BrokerKeys.activationDelay)
        try await keys.refresh(from: broker.store, now: broker.clock.now)
        #expect(keys.currentKeyID == second.id)
        let after = try await keys.sign(claims)
        #expect(try CompactJWS.header(of: after).kid == second.id)
        let verifier = try await BrokerTokenVerifier(
            jwksJSON: String(decoding: try WireCoding.encoder().encode(keys.jwks), as: UTF8.self),
            issuer: TestBroker.origin)
        for token in [before, after] {
            _ = try await verifier.verifyEventToken(token, apiKeyID: broker.apiKeyID)
        }

        broker.clock.advance(by: BrokerKeys.retirementDelay - 1)
        try await keys.refresh(from: broker.store, now: broker.clock.now)
        #expect(keys.jwks.keys.count == 2, "kept while a token it signed may live")
        broker.clock.advance(by: 2)
        try await keys.refresh(from: broker.store, now: broker.clock.now)
        #expect(keys.jwks.keys.map(\.kid) == [second.id], "then retired")
    }
}
