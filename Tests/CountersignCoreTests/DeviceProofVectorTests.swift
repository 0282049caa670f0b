import CountersignCore
import Foundation
import Testing

@Suite("proto/vectors: device proofs, decisions, what the approver was shown, thumbprints")
struct VectorTests {
    static let proofs = try! Vectors.load("device-proofs.json", as: ProofVectors.self)
    static let decisions = try! Vectors.load("decisions.json", as: DecisionVectors.self)
    static let thumbprints = try! Vectors.load("thumbprints.json", as: ThumbprintVectors.self)
    static let displays = try! Vectors.load("shown.json", as: ShownVectors.self)

    @Test("device proof", arguments: proofs.tests)
    func proof(_ test: ProofVectors.Test) async throws {
        let vectors = Self.proofs
        #expect(vectors.deviceKey.thumbprint == vectors.deviceId)
        do {
            _ = try await DeviceProof.verify(
                test.proof, key: vectors.deviceKey, method: test.method, path: test.path,
                acceptedOrigins: Set(vectors.origins.compactMap(Origin.init(url:))),
                now: Date(timeIntervalSince1970: TimeInterval(vectors.now)), leeway: 60)
            #expect(test.result == "valid", "accepted an invalid proof")
        } catch {
            #expect(test.result == "invalid", "refused a valid proof: \(error)")
            #expect(error.code.rawValue == test.error)
        }
    }

    @Test("decision", arguments: decisions.tests)
    func decision(_ test: DecisionVectors.Test) async throws {
        let vectors = Self.decisions
        do {
            _ = try await DecisionProof.verify(
                test.decision, key: vectors.deviceKey, eventID: vectors.eventId, nonce: vectors.nonce,
                shown: vectors.shown.request.digest,
                newDevice: test.pairing ? vectors.newDeviceId : nil,
                acceptedOrigins: Set(vectors.origins.compactMap(Origin.init(url:))),
                now: Date(timeIntervalSince1970: TimeInterval(vectors.now)), leeway: 60)
            #expect(test.result == "valid", "accepted an invalid decision")
        } catch {
            #expect(test.result == "invalid", "refused a valid decision: \(error)")
            #expect(error.code.rawValue == test.error)
        }
    }

    @Test("what the approver was shown", arguments: displays.tests)
    func display(_ test: ShownVectors.Test) {
        #expect((test.shown.request.digest == test.digest) == (test.result == "valid"))
    }

    @Test("the decisions' event display has the digest the vectors give")
    func decisionDisplay() {
        #expect(Self.decisions.shown.request.digest == Self.decisions.shownDigest)
    }

    @Test("thumbprint", arguments: thumbprints.tests)
    func thumbprint(_ test: ThumbprintVectors.Test) {
        #expect((test.jwk.thumbprint == test.thumbprint) == (test.result == "valid"))
    }

    @Test("the device proof vectors cover every way a proof can fail")
    func coverage() {
        let codes = Set(Self.proofs.tests.compactMap(\.error))
        #expect(
            codes == [
                "stale", "wrong_type", "wrong_algorithm", "wrong_device", "bad_signature", "wrong_method", "wrong_url",
                "malformed",
            ])
    }
}
