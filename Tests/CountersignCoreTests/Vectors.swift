import CountersignCore
import Foundation

/// Loads a vector file from proto/vectors, as swift-crypto loads Wycheproof.
enum Vectors {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("proto/vectors")

    static func load<T: Decodable>(_ name: String, as _: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(contentsOf: directory.appendingPathComponent(name)))
    }
}

struct ProofVectors: Decodable {
    struct Test: Decodable, CustomStringConvertible, Sendable {
        let tcId: Int
        let comment: String
        let proof: String
        let method: String
        let path: String
        let result: String
        let error: String?
        var description: String { "#\(tcId) \(comment)" }
    }
    let deviceKey: DevicePublicKey
    let deviceId: String
    let now: Int
    let origins: [String]
    let tests: [Test]
}

struct DecisionVectors: Decodable {
    struct Test: Decodable, CustomStringConvertible, Sendable {
        let tcId: Int
        let comment: String
        let decision: String
        let result: String
        let error: String?
        let pairing: Bool
        var description: String { "#\(tcId) \(comment)" }
    }
    let deviceKey: DevicePublicKey
    let deviceId: String
    let eventId: String
    let newDeviceId: String
    let nonce: String
    let now: Int
    let origins: [String]
    let shown: ShownVectors.Fields
    let shownDigest: String
    let tests: [Test]
}

struct ShownVectors: Decodable {
    /// A display as the vectors write it: the fields of ``ShownRequest``.
    struct Fields: Decodable, Sendable {
        let event, user, app, requester, address, location, details: String
        let created: Int
        var request: ShownRequest {
            ShownRequest(
                event: event, user: user, app: app, requester: requester, address: address, location: location,
                created: created, details: details)
        }
    }
    struct Test: Decodable, CustomStringConvertible, Sendable {
        let tcId: Int
        let comment: String
        let shown: Fields
        let digest: String
        let result: String
        var description: String { "#\(tcId) \(comment)" }
    }
    let tests: [Test]
}

struct ThumbprintVectors: Decodable {
    struct Test: Decodable, CustomStringConvertible, Sendable {
        let tcId: Int
        let comment: String
        let jwk: DevicePublicKey
        let thumbprint: String
        let result: String
        var description: String { "#\(tcId) \(comment)" }
    }
    let tests: [Test]
}
