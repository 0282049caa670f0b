import CountersignCore
import Foundation
import Testing

/// proto/vectors/quorums.json: events approved by several people, made by
/// an implementation independent of this one (scripts/generate-vectors.py).
struct QuorumVectors: Decodable {
    struct Test: Decodable, CustomStringConvertible, Sendable {
        let tcId: Int
        let comment: String
        let event: EventDocument
        let approvers: [String]
        let requiredApprovals: Int
        let allowRequester: Bool
        let result: String
        let error: String?
        let counted: [String]?
        var description: String { "#\(tcId) \(comment)" }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            tcId = try container.decode(Int.self, forKey: .tcId)
            comment = try container.decode(String.self, forKey: .comment)
            // The event document as the API sends it: its own date format.
            let document = try container.decode(JSONValue.self, forKey: .event)
            event = try WireCoding.decoder().decode(EventDocument.self, from: JSONEncoder().encode(document))
            approvers = try container.decode([String].self, forKey: .approvers)
            requiredApprovals = try container.decode(Int.self, forKey: .requiredApprovals)
            allowRequester = try container.decode(Bool.self, forKey: .allowRequester)
            result = try container.decode(String.self, forKey: .result)
            error = try container.decodeIfPresent(String.self, forKey: .error)
            counted = try container.decodeIfPresent([String].self, forKey: .counted)
        }

        enum CodingKeys: String, CodingKey {
            case tcId, comment, event, approvers, requiredApprovals, allowRequester, result, error, counted
        }
    }
    let app: String
    let broker: String
    let pinnedKeys: [String: [DevicePublicKey]]
    let tests: [Test]
}

/// Any JSON, carried through as it is.
indirect enum JSONValue: Codable, Sendable {
    case null, bool(Bool), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

@Suite("proto/vectors: quorums of approvers")
struct QuorumVectorTests {
    static let vectors = try! Vectors.load("quorums.json", as: QuorumVectors.self)

    @Test("quorum", arguments: vectors.tests)
    func quorum(_ test: QuorumVectors.Test) async throws {
        let vectors = Self.vectors
        do {
            let counted = try await DecisionProof.checkQuorum(
                storedIn: test.event, app: vectors.app, pinnedKeys: vectors.pinnedKeys, approvers: test.approvers,
                requiredApprovals: test.requiredApprovals, allowRequester: test.allowRequester,
                broker: vectors.broker)
            #expect(test.result == "valid", "accepted an invalid quorum")
            #expect(counted.map(\.clientUserID) == test.counted)
        } catch {
            #expect(test.result == "invalid", "refused a valid quorum: \(error)")
            #expect(error.code.rawValue == test.error)
        }
    }

    @Test("an event with approvers is never checked as one decision")
    func oneDecisionIsNoQuorum() async throws {
        let test = try #require(Self.vectors.tests.first { $0.result == "valid" })
        await #expect(throws: ProtocolError(.tooFewApprovals, "")) {
            try await DecisionProof.check(
                storedIn: test.event, app: Self.vectors.app, pinnedKeys: Self.vectors.pinnedKeys.values.flatMap { $0 })
        }
    }
}
