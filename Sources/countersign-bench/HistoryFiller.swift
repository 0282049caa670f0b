import CountersignCore
import CountersignStore
import Crypto
import Foundation
import Synchronization

/// The history's shape is drawn from a seeded generator, so that two fills
/// with one seed hold the same amounts at the same times.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The users' ids, which the console scenario asks for.
enum BenchUsers {
    static func id(_ index: Int) -> String { String(format: "bench-user-%05d", index) }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// Runs `body` for each of `items`, at most `width` at once.
func forEach<T: Sendable>(_ items: [T], width: Int, _ body: @escaping @Sendable (T) async throws -> Void)
    async throws
{
    try await withThrowingTaskGroup(of: Void.self) { group in
        var running = 0
        for item in items {
            if running >= width {
                try await group.next()
                running -= 1
            }
            group.addTask { try await body(item) }
            running += 1
        }
        try await group.waitForAll()
    }
}

/// Writes the history, step by step, each timed.
struct HistoryFiller {
    struct Device: Sendable {
        let id: String
        let key: P256.Signing.PrivateKey
    }

    /// A user's account at one app.
    struct Account: Sendable {
        let app: APIKey
        let user: String
        var devices: [Device] = []
    }

    enum Outcome: Sendable {
        case approved, rejected, expired, withdrawn, fraud
    }

    struct PlannedEvent: Sendable {
        let account: Int
        let createdAt: Date
        let name: String
        let details: String?
        /// The requester's address; nil when the app backend asked.
        let requester: String?
        let ip: String
        let outcome: Outcome
        /// Seconds from creation to the answer (or the withdrawal).
        let answerAfter: TimeInterval
        let device: Int
    }

    let options: ConsoleFill
    let store: any CountersignStore
    let now = Date()
    var random: SplitMix64
    var keys: [APIKey] = []
    var accounts: [Account] = []
    var endpoints: [WebhookEndpoint] = []

    init(options: ConsoleFill, store: any CountersignStore) {
        self.options = options
        self.store = store
        random = SplitMix64(state: options.seed)
    }

    /// The first day of the history.
    var begin: Date { now - Double(options.days) * 86400 }
    /// An address of the documentation ranges (RFC 5737), 512 of them.
    static func address(_ index: Int) -> String {
        (index % 512 < 256 ? "203.0.113." : "198.51.100.") + String(index % 256)
    }
    /// No limit holds the history back: it is what requesters did, not
    /// what they may do next.
    static let unlimited = PendingLimits(
        perUser: 1 << 30, perUserFromRequesters: 1 << 30, perAddress: 1 << 30, requestsPerUser: 1 << 30,
        requestsPerAddress: 1 << 30)

    mutating func fill() async throws {
        try await step("apps, webhook endpoints") { try await $0.addApps() }
        try await step("users and devices") { try await $0.enroll() }
        let plan = planEvents()
        try await step("\(plan.count) events") { try await $0.write(plan) }
        try await step("devices seen and removed") { try await $0.touchDevices() }
        try await step("\(options.invitations) invitations") { try await $0.invite() }
        // Last: every write before it may have queued webhook messages.
        try await step("expiries announced, webhook messages sent") { try await $0.deliverOutbox() }
        try await step("\(options.auditLines) audit lines") { try await $0.writeAudit() }
    }

    private mutating func step(_ name: String, _ body: (inout HistoryFiller) async throws -> String?) async throws {
        let started = ContinuousClock.now
        let detail = try await body(&self)
        let line = String(format: "%@: %.1f s", name, (ContinuousClock.now - started).seconds)
        print(line + (detail.map { " (\($0))" } ?? ""))
        fflush(nil)
    }

    private mutating func addApps() async throws -> String? {
        for index in 0..<options.apps {
            let key = APIKey(
                id: APIKey.newID(), name: "Bench app \(index + 1)",
                secretDigest: SecretToken.digest(SecretToken.generate(bytes: 32)), createdAt: begin - 7 * 86400)
            try await store.insertAPIKey(key)
            try await store.recordAPIKeyChange(
                APIKeyChange(apiKeyID: key.id, action: .created, via: "cli", at: key.createdAt))
            keys.append(key)
        }
        for key in keys.prefix(options.webhookApps) {
            let endpoint = WebhookEndpoint(
                apiKeyID: key.id, url: "https://hooks.example.com/countersign/\(key.id)", types: [],
                secret: .generate(), createdAt: begin - 86400)
            try await store.insertWebhookEndpoint(endpoint)
            endpoints.append(endpoint)
        }
        return nil
    }

    /// Each user's devices, enrolled with one-time tokens the app backend
    /// issued, before the history starts.
    private mutating func enroll() async throws -> String? {
        for index in 0..<options.users {
            accounts.append(Account(app: keys[index % keys.count], user: BenchUsers.id(index)))
            if index % 10 == 9, keys.count > 1 {
                accounts.append(Account(app: keys[(index + 1) % keys.count], user: BenchUsers.id(index)))
            }
        }
        var enrollments: [(account: Int, at: Date, address: String)] = []
        for account in accounts.indices {
            for _ in 0..<(Int.random(in: 0..<10, using: &random) < 4 ? 2 : 1) {
                enrollments.append(
                    (
                        account, begin - Double.random(in: 3600...(60 * 86400), using: &random),
                        Self.address(Int.random(in: 0..<512, using: &random))
                    ))
            }
        }
        let devices = Mutex<[(Int, Device)]>([])
        let (store, users) = (store, accounts)
        try await forEach(enrollments, width: options.writers) { enrollment in
            let account = users[enrollment.account]
            let key = P256.Signing.PrivateKey()
            let token = "et_" + SecretToken.generate(bytes: 32)
            try await store.insertEnrollmentToken(
                EnrollmentToken(
                    digest: SecretToken.digest(token), issuer: account.app.id, clientUserID: account.user,
                    createdAt: enrollment.at, expiresAt: enrollment.at + 86400))
            let device = TrustedDevice(
                publicKey: DevicePublicKey(key.publicKey), issuer: account.app.id, clientUserID: account.user,
                name: "Phone of \(account.user)", type: "phone", createdAt: enrollment.at + 30)
            try await store.enrollDevice(
                device, consumingToken: SecretToken.digest(token),
                author: ChangeAuthor(actor: ChangeAuthor.enrollmentToken, ip: enrollment.address),
                now: enrollment.at + 30)
            devices.withLock { $0.append((enrollment.account, Device(id: device.id, key: key))) }
        }
        for (account, device) in devices.withLock({ $0 }) { accounts[account].devices.append(device) }
        return "\(accounts.count) accounts, \(enrollments.count) devices"
    }

    /// Who asked for what, when, and how it ended. The last ten events
    /// (a hundredth when there are fewer than 1,000) are reported as fraud
    /// in the last minutes: after them, requesters are refused for their
    /// users.
    private mutating func planEvents() -> [PlannedEvent] {
        let frauds = min(10, options.events / 100, accounts.count)
        let span = now.timeIntervalSince(begin) - 600
        var plan: [PlannedEvent] = []
        plan.reserveCapacity(options.events)
        for index in 0..<options.events {
            let fraud = index >= options.events - frauds
            // Each report for a user of its own: after one, requesters are refused for the user.
            let account =
                fraud
                ? (index - (options.events - frauds)) * (accounts.count / frauds)
                : Int.random(in: 0..<accounts.count, using: &random)
            let createdAt =
                fraud
                ? now - 540 + Double(index - (options.events - frauds)) * 30
                : begin + Double.random(in: 0..<span, using: &random)
            let roll = Int.random(in: 0..<100, using: &random)
            let outcome: Outcome =
                fraud ? .fraud : roll < 86 ? .approved : roll < 93 ? .rejected : roll < 97 ? .expired : .withdrawn
            let transaction = Int.random(in: 0..<5, using: &random) == 0
            let requester = fraud || Int.random(in: 0..<10, using: &random) < 6
            let ip = Self.address(Int.random(in: 0..<512, using: &random))
            plan.append(
                PlannedEvent(
                    account: account, createdAt: createdAt, name: transaction ? "TRANSACTION" : EventName.login,
                    details: transaction ? "Pay €\(Int.random(in: 5...900, using: &random)).00 to ACME" : nil,
                    requester: requester ? ip : nil, ip: ip, outcome: outcome,
                    answerAfter: Double.random(in: 3...45, using: &random),
                    device: Int.random(in: 0..<accounts[account].devices.count, using: &random)))
        }
        // Written in the order they happened, as a broker would have.
        return plan.sorted { $0.createdAt < $1.createdAt }
    }

    /// Each event as the broker writes it: the pending event (with its
    /// request counters and webhook messages), then the device's signed
    /// decision, the withdrawal, the fraud report, or nothing (it expires).
    private func write(_ plan: [PlannedEvent]) async throws -> String? {
        let (store, accounts, broker) = (store, accounts, options.brokerURL)
        // The bulk first, then the fraud reports, after which requesters
        // are refused for those users.
        // In tenths, each timed: the writes slow down as the file grows.
        let bulk = plan.filter { $0.outcome != .fraud }
        let tenth = (bulk.count + 9) / 10
        var batches = stride(from: 0, to: bulk.count, by: tenth).map { Array(bulk[$0..<min($0 + tenth, bulk.count)]) }
        batches.append(plan.filter { $0.outcome == .fraud })
        var written = 0
        for batch in batches {
            let started = ContinuousClock.now
            try await forEach(batch, width: options.writers) { planned in
                let account = accounts[planned.account]
                let event = ApprovalEvent.pending(
                    issuer: account.app.id, user: account.user, name: planned.name, ip: planned.ip, location: nil,
                    details: planned.details, requesterName: planned.requester == nil ? nil : "\(account.app.name) web",
                    matchNumber: ApprovalEvent.newMatchNumber(),
                    requesterTokenDigest: SecretToken.digest(SecretToken.generate(bytes: 32)), newDevice: nil,
                    now: planned.createdAt, window: 60)
                try await store.insertPendingEvent(
                    event, by: planned.requester.map { .requester(address: $0) } ?? .backend,
                    limits: Self.unlimited, announcing: [], now: planned.createdAt)
                let answeredAt = planned.createdAt + planned.answerAfter
                let device = account.devices[planned.device]
                func decision(_ verdict: Verdict) async throws -> RecordedDecision {
                    let jws = try await DecisionProof.make(
                        key: device.key, eventID: event.id, nonce: event.nonce, verdict: verdict,
                        match: verdict == .approve ? event.matchNumber : nil,
                        shown: ShownRequest(event, app: account.app.name).digest, broker: broker, now: answeredAt)
                    return RecordedDecision(
                        status: verdict == .approve ? .approved : .rejected, deviceID: device.id, jws: jws,
                        ip: "192.0.2.\(planned.device + 1)")
                }
                switch planned.outcome {
                case .approved:
                    _ = try await store.settleEvent(id: event.id, decision: decision(.approve), now: answeredAt)
                case .rejected:
                    _ = try await store.settleEvent(id: event.id, decision: decision(.reject), now: answeredAt)
                case .withdrawn:
                    _ = try await store.updateEvent(id: event.id, spending: nil, now: answeredAt) {
                        $0.withdrawn(at: answeredAt)
                    }
                case .fraud:
                    // Protected for a day (a broker run with --fraud-protection 1d),
                    // so that the protections still run while the console is measured.
                    _ = try await store.reportFraud(
                        id: event.id, decision: decision(.fraud), protectUntil: answeredAt + 86400, now: answeredAt)
                case .expired:
                    break
                }
            }
            written += batch.count
            let elapsed = (ContinuousClock.now - started).seconds
            print(
                String(
                    format: "  %d events written, the last %d at %.0f a second", written, batch.count,
                    Double(batch.count) / elapsed))
            fflush(nil)
        }
        var counts: [String: Int] = [:]
        for planned in plan { counts["\(planned.outcome)", default: 0] += 1 }
        return counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            + ", \(plan.filter { $0.requester != nil }.count) by requesters"
    }

}
