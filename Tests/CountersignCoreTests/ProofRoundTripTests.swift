import CountersignCore
import Crypto
import Foundation
import Testing

@Suite("proofs and decisions made here verify here")
struct ProofRoundTripTests {
    let key = P256.Signing.PrivateKey()
    let origins: Set<Origin> = [Origin(url: "http://127.0.0.1:8080")!]
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a proof names method and path; the query is dropped from htu")
    func proof() async throws {
        let token = try await DeviceProof.make(
            key: key, method: "get", url: "http://127.0.0.1:8080/api/v1/inbox?wait=25", now: now)
        #expect(try DeviceProof.deviceID(in: token) == DevicePublicKey(key.publicKey).thumbprint)
        let claims = try await DeviceProof.verify(
            token, key: DevicePublicKey(key.publicKey), method: "GET", path: "/api/v1/inbox", acceptedOrigins: origins,
            now: now, leeway: 60)
        #expect(claims.htu == "http://127.0.0.1:8080/api/v1/inbox")
        #expect(claims.jti.count >= 22)
    }

    @Test("a decision binds event, nonce, verdict and what the approver was shown")
    func decision() async throws {
        let nonce = SecretToken.generate(bytes: 16)
        let shown = ShownRequest(
            event: "LOGIN", user: "alice", app: "Example", requester: "laptop", address: "192.0.2.1",
            location: "Unknown", created: 1_800_000_000, details: "Pay 10 EUR")
        let token = try await DecisionProof.make(
            key: key, eventID: "ev_1", nonce: nonce, verdict: .approve, match: "42", shown: shown.digest,
            broker: "http://127.0.0.1:8080/", now: now)
        func verify(eventID: String = "ev_1", shown: ShownRequest = shown) async throws -> DecisionClaims {
            try await DecisionProof.verify(
                token, key: DevicePublicKey(key.publicKey), eventID: eventID, nonce: nonce, shown: shown.digest,
                acceptedOrigins: origins, now: now, leeway: 60)
        }
        let claims = try await verify()
        #expect(claims.decision == .approve && claims.match == "42" && claims.shown == shown.digest)
        await #expect(throws: ProtocolError(.wrongEvent, "")) { try await verify(eventID: "ev_2") }
        var edited = shown
        edited.details = "Pay 10000 EUR"
        await #expect(throws: ProtocolError(.wrongDisplay, "")) { try await verify(shown: edited) }
    }

    @Test("device keys off the curve or of another type are refused")
    func invalidKeys() throws {
        let good = DevicePublicKey(key.publicKey)
        #expect(throws: ProtocolError(.invalidKey, "")) {
            try DevicePublicKey(kty: "EC", crv: "P-384", x: good.x, y: good.y)
        }
        #expect(throws: ProtocolError(.invalidKey, "")) {
            try DevicePublicKey(kty: "RSA", crv: "P-256", x: good.x, y: good.y)
        }
        #expect(throws: ProtocolError(.invalidKey, "")) {
            try DevicePublicKey(kty: "EC", crv: "P-256", x: good.x, y: good.x)
        }
        #expect(throws: ProtocolError(.invalidKey, "")) {
            try DevicePublicKey(kty: "EC", crv: "P-256", x: good.x + "AA", y: good.y)
        }
    }

    @Test("base64url decoding is strict")
    func base64url() {
        #expect(Base64URL.decode("AQID") == Data([1, 2, 3]))
        #expect(Base64URL.decode("AQI") == Data([1, 2]))
        #expect(Base64URL.decode("AQI=") == nil, "padding")
        #expect(Base64URL.decode("AQ+D") == nil, "standard alphabet")
        #expect(Base64URL.decode("AQJ") == nil, "non-canonical trailing bits")
        #expect(Base64URL.decode("A") == nil, "impossible length")
        #expect(Base64URL.decode("") == Data() && Base64URL.encode([]) == "")
    }

    @Test("base64url agrees with Foundation's base64 on every length, both ways")
    func base64urlAgreesWithFoundation() {
        for length in 0...96 {
            let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max) }
            let reference = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == reference, "length \(length)")
            #expect(Base64URL.decode(reference) == Data(bytes), "length \(length)")
        }
    }
}
