import CountersignBroker
import CountersignCore
import CountersignSQLite
import CountersignSenders
import CountersignStore
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { current.withLock { $0 } }
    func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }
}

/// A broker on a real SQLite file with a hand-moved clock, driven through
/// HummingbirdTesting's router client (no socket).
struct TestBroker {
    static let origin = "http://127.0.0.1:8080"

    let environment: BrokerEnvironment
    let clock: TestClock
    let store: SQLiteStore
    let databasePath: String
    let apiKeyID: String
    let apiSecret: String

    init(
        policy: ApprovalPolicy = ApprovalPolicy(), sender: any CodeSender = CapturingSender(),
        vault: TOTPVault? = TOTPVault(key: SymmetricKey(size: .bits256)), codeLimits: CodeLimits = CodeLimits(),
        trustedProxies: [IPNetwork] = [], push: PushConfiguration? = nil, otherOrigins: [String] = []
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("broker-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        databasePath = directory.appendingPathComponent("db.sqlite").path
        // Commits are not synced to the disk: no test here cuts the power,
        // and on a machine busy with the end-to-end suite an fsync per
        // commit made single requests outlast HummingbirdTesting's 20 s.
        store = try SQLiteStore(path: databasePath, durability: .relaxed)
        clock = TestClock()
        apiSecret = SecretToken.generate()
        apiKeyID = APIKey.newID()
        try await store.insertAPIKey(
            APIKey(id: apiKeyID, name: "demo", secretDigest: SecretToken.digest(apiSecret), createdAt: clock.now))
        let clock = self.clock
        environment = BrokerEnvironment(
            store: store, policy: policy, issuer: Self.origin,
            origins: Set(([Self.origin] + otherOrigins).map { Origin(url: $0)! }),
            keys: try await BrokerKeys.load(from: store, now: clock.now), sender: sender, vault: vault,
            codeLimits: codeLimits, trustedProxies: trustedProxies,
            push: try await push?.settings(
                store: store, issuer: Self.origin, logger: Logger(label: "test-broker"), now: { clock.now }),
            now: { clock.now })
    }

    /// The same broker seen as another app, with that app's API key.
    init(sharing broker: TestBroker, apiKeyID: String, apiSecret: String) {
        environment = broker.environment
        clock = broker.clock
        store = broker.store
        databasePath = broker.databasePath
        self.apiKeyID = apiKeyID
        self.apiSecret = apiSecret
    }

    /// Another app on the same broker.
    func addAPIKey(name: String) async throws -> (id: String, secret: String) {
        let secret = SecretToken.generate()
        let id = APIKey.newID()
        try await store.insertAPIKey(
            APIKey(id: id, name: name, secretDigest: SecretToken.digest(secret), createdAt: clock.now))
        return (id, secret)
    }

    func test<T>(_ body: @escaping @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        var logger = Logger(label: "test-broker")
        logger.logLevel = .warning
        let app = Application(router: buildRouter(environment), logger: logger)
        return try await app.test(.router) { client in try await body(client) }
    }

    var backendHeaders: HTTPFields { Self.backend(apiKeyID, apiSecret) }

    static func backend(_ id: String, _ secret: String) -> HTTPFields {
        [
            .authorization: "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString(),
            .contentType: "application/json",
        ]
    }

    var appHeaders: HTTPFields { [HTTPField.Name("API_KEY_ID")!: apiKeyID, .contentType: "application/json"] }
}

/// A device key held by a test.
struct TestDevice {
    let key = P256.Signing.PrivateKey()
    var id: String { DevicePublicKey(key.publicKey).thumbprint }
    var jwk: DevicePublicKey { DevicePublicKey(key.publicKey) }

    /// Headers with a fresh proof for `method` `path` at `now`.
    func proofHeaders(_ method: HTTPRequest.Method, _ path: String, now: Date) async throws -> HTTPFields {
        let proof = try await DeviceProof.make(
            key: key, method: method.rawValue, url: TestBroker.origin + path, now: now)
        return [HTTPField.Name("Device-Proof")!: proof, .contentType: "application/json"]
    }

    func decision(
        on item: InboxItem, _ verdict: Verdict, match: String?, now: Date, eventID: String? = nil,
        broker: String = TestBroker.origin
    ) async throws -> String {
        try await DecisionProof.make(
            key: key, eventID: eventID ?? item.event.ID, nonce: item.nonce, verdict: verdict, match: match,
            shown: ShownRequest(item).digest, broker: broker, now: now)
    }
}

func json(_ value: some Encodable) throws -> ByteBuffer {
    ByteBuffer(bytes: try WireCoding.encoder().encode(value))
}

func decode<T: Decodable>(_: T.Type, _ response: TestResponse) throws -> T {
    try WireCoding.decoder().decode(T.self, from: Data(response.body.readableBytesView))
}

func errorCode(_ response: TestResponse) -> String? {
    (try? decode(ErrorDocument.self, response))?.error
}
