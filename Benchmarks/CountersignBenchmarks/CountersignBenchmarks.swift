import Benchmark
import CountersignBroker
import CountersignCore
import CountersignSQLite
import CountersignStore
import Crypto
import Foundation

/// The pieces every approval round trip runs: the two P-256 verifications
/// (the inbox proof and the decision), the event-token signature, the
/// store's decision write (fsynced, and relaxed) and its event read, and
/// the event document's JSON. `swift package benchmark` runs them.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .throughput, .mallocCountTotal],
        warmupIterations: 20, maxDuration: .seconds(3), maxIterations: 20_000)

    let broker = "http://127.0.0.1:8080"
    let origins: Set<Origin> = [Origin(url: broker)!]
    let deviceKey = P256.Signing.PrivateKey()
    let device = DevicePublicKey(deviceKey.publicKey)
    let digest = SHA256.hash(data: Data("a round trip".utf8))
    let signature = try! deviceKey.signature(for: digest)

    Benchmark("P-256 signature verification (swift-crypto, the floor)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(deviceKey.publicKey.isValidSignature(signature, for: digest))
        }
    }

    Benchmark("P-256 signature (swift-crypto, the floor)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try deviceKey.signature(for: digest))
        }
    }

    Benchmark("device proof: read its kid and verify it") { benchmark in
        let now = Date()
        let proof = try await DeviceProof.make(key: deviceKey, method: "GET", url: broker + "/api/v1/inbox", now: now)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try DeviceProof.deviceID(in: proof))
            blackHole(
                try await DeviceProof.verify(
                    proof, key: device, method: "GET", path: "/api/v1/inbox", acceptedOrigins: origins, now: now,
                    leeway: 60))
        }
    }

    Benchmark("decision: verify its signature and binding, with what was shown") { benchmark in
        let now = Date()
        let nonce = SecretToken.generate(bytes: 16)
        let shown = ShownRequest(
            event: "LOGIN", user: "alice", app: "Benchmark", requester: "laptop", address: "192.0.2.1",
            location: "Unknown", created: Int(now.timeIntervalSince1970), details: "Sign in to Benchmark")
        let decision = try await DecisionProof.make(
            key: deviceKey, eventID: "ev_benchmark", nonce: nonce, verdict: .approve, match: "42",
            shown: shown.digest, broker: broker, now: now)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(
                try await DecisionProof.verify(
                    decision, key: device, eventID: "ev_benchmark", nonce: nonce, shown: shown.digest,
                    acceptedOrigins: origins, now: now, leeway: 60))
        }
    }

    let signingStore = Store(durability: .relaxed)
    Benchmark(
        "event token: sign with the broker's key",
        closure: { benchmark in
            let now = Date()
            let keys = try await BrokerKeys.load(from: signingStore.store, now: now)
            let event = Store.event(now: now).decided(by: device.thumbprint, at: now)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(
                    try await keys.sign(EventTokenClaims(event: event, issuer: broker, now: now, lifetime: 300)))
            }
        }, teardown: { signingStore.remove() })

    let document = EventDocument(Store.event(now: Date()), now: Date(), signature: nil)
    Benchmark("event document: JSON as the broker writes it") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(document.wireJSON())
        }
    }
    Benchmark("event document: JSON through Foundation's JSONEncoder") { benchmark in
        let encoder = WireCoding.encoder()
        for _ in benchmark.scaledIterations {
            blackHole(try encoder.encode(document))
        }
    }

    for durability in SQLiteStore.Durability.allCases {
        let store = Store(durability: durability)
        Benchmark(
            "SQLite, durability \(durability.rawValue): settle an event (the decision write)",
            closure: { benchmark in
                try await store.enroll()
                let now = Date()
                let event = Store.event(now: now)
                try await store.store.insertPendingEvent(event, maxPending: 1_000_000, now: now)
                benchmark.startMeasurement()
                blackHole(
                    try await store.store.settleEvent(
                        id: event.id,
                        decision: RecordedDecision(status: .approved, deviceID: store.device.id, jws: "jws"),
                        now: now))
            }, teardown: { store.remove() })
    }

    let readStore = Store(durability: .full)
    Benchmark(
        "SQLite: read an event by id",
        closure: { benchmark in
            let now = Date()
            let event = Store.event(now: now)
            try await readStore.store.insertPendingEvent(event, maxPending: 1_000_000, now: now)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(try await readStore.store.event(id: event.id))
            }
        }, teardown: { readStore.remove() })
}

/// A SQLite store in a directory of its own, removed after its benchmark,
/// with one user whose trusted device decides its events.
struct Store: Sendable {
    static let user = "benchmark-user"
    let directory: URL
    let store: SQLiteStore
    let device = TrustedDevice(
        publicKey: DevicePublicKey(P256.Signing.PrivateKey().publicKey), issuer: "ck_benchmark",
        clientUserID: Store.user, name: "laptop", type: "cli", createdAt: Date())

    init(durability: SQLiteStore.Durability) {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("countersign-bench-\(UUID())")
        try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        store = try! SQLiteStore(path: directory.appendingPathComponent("broker.sqlite").path, durability: durability)
    }

    /// Enrolls the user's device (once per store).
    func enroll() async throws {
        guard try await store.device(id: device.id) == nil else { return }
        try await store.enrollFirstDevice(
            device, author: ChangeAuthor(actor: "benchmark", ip: "127.0.0.1"), now: Date())
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    /// A pending LOGIN like the ones the load benchmark creates.
    static func event(now: Date) -> ApprovalEvent {
        ApprovalEvent(
            id: ApprovalEvent.newID(), createdAt: now, updatedAt: now, issuer: "ck_benchmark",
            clientUserID: user, name: EventName.login, ip: "127.0.0.1", location: "Unknown",
            method: .trustedDevice, storedStatus: .pending, expiresAt: now + 60, details: nil,
            requesterName: "new-laptop", nonce: SecretToken.generate(bytes: 16), matchNumber: "42", wrongMatches: 0,
            requesterTokenDigest: SecretToken.digest("requester"), decidedBy: nil, decidedAt: nil, decision: nil)
    }
}

extension ApprovalEvent {
    fileprivate func decided(by deviceID: String, at now: Date) -> ApprovalEvent {
        var event = self
        event.storedStatus = .approved
        event.decidedBy = deviceID
        event.decidedAt = now
        return event
    }
}
