import CountersignCore
import CountersignSQLite
import CountersignStore
import Crypto
import Foundation

/// What follows the events in a filled history: the outbox delivered,
/// devices last seen, the audit log, and the operator signed in.
extension HistoryFiller {
    /// What the broker's outbox would have done: the expiries announced,
    /// and every webhook message sent, a day's of one endpoint failed (its
    /// receiver was down) and the rest delivered, so that nothing is left
    /// for the broker to send.
    func deliverOutbox() async throws -> String? {
        while try await store.announceExpiredEvents(now: now, limit: 1000) > 0 {}
        let failingEndpoint = endpoints.last?.id
        let downFrom = now - 3 * 86400
        let downUntil = now - 2 * 86400
        var delivered = 0
        var failed = 0
        while true {
            let claim = SecretToken.generate(bytes: 16)
            let claimed = try await store.claimOutboxMessages(limit: 1000, lease: 3600, claim: claim, now: now)
            if claimed.isEmpty { break }
            let store = store
            let outcomes = claimed.map { claimed in
                let message = claimed.message
                let down =
                    message.target == failingEndpoint && message.createdAt >= downFrom
                    && message.createdAt < downUntil
                return (message, down)
            }
            failed += outcomes.filter(\.1).count
            delivered += outcomes.filter { !$0.1 }.count
            try await forEach(outcomes, width: options.writers) { message, down in
                try await store.finishOutboxAttempt(
                    id: message.id, claim: claim,
                    outcome: down ? .failed(reason: "HTTP 503 after 3 days of attempts") : .delivered,
                    now: down ? min(message.deliverUntil, downUntil + 86400) : message.createdAt + 1)
            }
        }
        return "\(delivered) delivered, \(failed) failed"
    }

    /// People invited by an operator over the history, none enrolled yet,
    /// their links lasting 30 days (all open at the end); every tenth sent
    /// again an hour later. Their mail goes with the webhooks' messages.
    func invite() async throws -> String? {
        let count = options.invitations
        guard count > 0, !keys.isEmpty else { return nil }
        let (store, keys, begin, span) = (store, keys, begin, Double(options.days) * 86400)
        try await forEach(Array(0..<count), width: options.writers) { index in
            let user = String(format: "bench-invitee-%05d", index)
            let key = keys[index % keys.count]
            var ask = InvitationRules.Request(
                issuer: key.id, appName: key.name, clientUserID: user, email: user + "@example.org",
                operatorName: "bench", ip: "127.0.0.1", lifetime: 30 * 86400, broker: "https://broker.example",
                now: begin + span * Double(index) / Double(count))
            let sent = try await store.updateInvitations(issuer: key.id, clientUserID: user) { [ask] in
                try InvitationRules.invite($0, ask)
            }
            guard index % 10 == 0, let first = sent.added else { return }
            ask.now += 3600
            _ = try await store.updateInvitations(issuer: key.id, clientUserID: user) { [ask] in
                try InvitationRules.resend($0, id: first.id, ask)
            }
        }
        return "\(count + (count + 9) / 10) rows"
    }

    /// Devices seen in the last day, and one second device in fifty removed
    /// by an operator at the console, after the events they decided.
    mutating func touchDevices() async throws -> String? {
        var devices: [(device: Device, account: Account, seen: Date, remove: Bool)] = []
        for account in accounts {
            for (index, device) in account.devices.enumerated() {
                devices.append(
                    (
                        device, account, now - Double.random(in: 0..<86400, using: &random),
                        index > 0 && Int.random(in: 0..<50, using: &random) == 0
                    ))
            }
        }
        let (store, now) = (store, now)
        try await forEach(devices, width: options.writers) { device, account, seen, remove in
            try await store.markDeviceSeen(id: device.id, now: seen)
            if remove {
                _ = try await store.revokeDevice(
                    id: device.id, issuer: account.app.id, clientUserID: account.user,
                    author: ChangeAuthor(actor: ChangeAuthor.consoleOperator("alice"), ip: "10.0.0.5"),
                    now: now - 3600)
            }
        }
        return "\(devices.filter(\.remove).count) removed"
    }

    /// Operators' past work, oldest first.
    mutating func writeAudit() async throws -> String? {
        let actions: [(AuditRecord.Action, Int)] = [
            (.signedIn, 30), (.signedOut, 22), (.signInRefused, 4), (.deviceRemoved, 12), (.webhookResent, 10),
            (.fraudProtectionEnded, 5), (.enrollmentIssued, 8), (.endpointDisabled, 2), (.endpointEnabled, 2),
            (.apiKeyRotated, 3), (.apiKeyCreated, 1), (.apiKeyRevoked, 1),
        ]
        let weights = actions.reduce(0) { $0 + $1.1 }
        let operators = ["alice", "bob", "carol", "dave"]
        var records: [AuditRecord] = []
        for _ in 0..<options.auditLines {
            var roll = Int.random(in: 0..<weights, using: &random)
            var action = actions[0].0
            for (candidate, weight) in actions {
                if roll < weight {
                    action = candidate
                    break
                }
                roll -= weight
            }
            let actor = operators[Int.random(in: 0..<operators.count, using: &random)]
            let target: String? =
                switch action {
                case .signedIn, .signedOut, .signInRefused: ApprovalEvent.newID()
                case .deviceRemoved: DevicePublicKey(P256.Signing.PrivateKey().publicKey).thumbprint
                case .webhookResent: OutboxMessage.newID()
                case .endpointDisabled, .endpointEnabled: endpoints.first?.id ?? WebhookEndpoint.newID()
                case .apiKeyRotated, .apiKeyCreated, .apiKeyRevoked: keys[0].id
                default: BenchUsers.id(Int.random(in: 0..<options.users, using: &random))
                }
            records.append(
                AuditRecord(
                    at: begin + Double.random(in: 0..<(now.timeIntervalSince(begin) - 3600), using: &random),
                    actor: actor, action: action, target: target,
                    ip: "10.0.0.\(operators.firstIndex(of: actor)! + 2)"))
        }
        // One at a time, in order: the log's ids follow its times.
        for record in records.sorted(by: { $0.at < $1.at }) { try await store.appendAudit(record) }
        return nil
    }

    /// The operator, added as `device-broker operator add` adds one, with a
    /// device enrolled by its token, and a session started by an approved
    /// LOGIN of the console's app, as the console's sign-in starts one.
    /// Returns the session cookie's secret.
    func signIn(secret: String) async throws -> String {
        let name = options.operatorName
        let address = "127.0.0.1"
        let added = now - 600
        try await store.addOperator(
            Operator(name: name, addedAt: added),
            audit: AuditRecord(at: added, actor: AuditRecord.host, action: .operatorAdded, target: name))
        let console = APIKey(
            id: ConsoleApp.apiKeyID, name: ConsoleApp.name,
            secretDigest: SecretToken.digest(SecretToken.generate(bytes: 32)), createdAt: added)
        try await store.insertAPIKey(console)
        try await store.recordAPIKeyChange(APIKeyChange(apiKeyID: console.id, action: .created, via: "cli", at: added))
        let token = "et_" + SecretToken.generate(bytes: 32)
        try await store.insertEnrollmentToken(
            EnrollmentToken(
                digest: SecretToken.digest(token), issuer: console.id, clientUserID: name, createdAt: added,
                expiresAt: added + ApprovalPolicy().enrollmentTokenLifetime))
        try await store.appendAudit(
            AuditRecord(at: added, actor: AuditRecord.host, action: .enrollmentIssued, target: name))
        let key = P256.Signing.PrivateKey()
        let device = TrustedDevice(
            publicKey: DevicePublicKey(key.publicKey), issuer: console.id, clientUserID: name,
            name: "Phone of \(name)", type: "phone", createdAt: added + 60)
        try await store.enrollDevice(
            device, consumingToken: SecretToken.digest(token),
            author: ChangeAuthor(actor: ChangeAuthor.enrollmentToken, ip: address), now: added + 60)

        let asked = now - 120
        let login = ApprovalEvent.pending(
            issuer: console.id, user: name, name: EventName.login, ip: address, location: nil,
            details: "Sign in to the operator's console", requesterName: "Countersign console",
            matchNumber: ApprovalEvent.newMatchNumber(),
            requesterTokenDigest: SecretToken.digest(SecretToken.generate(bytes: 32)), newDevice: nil, now: asked,
            window: 60)
        try await store.insertPendingEvent(
            login, by: .requester(address: address), limits: PendingLimits().forSignInPage, announcing: [],
            now: asked)
        let approvedAt = asked + 10
        let jws = try await DecisionProof.make(
            key: key, eventID: login.id, nonce: login.nonce, verdict: .approve, match: login.matchNumber,
            shown: ShownRequest(login, app: console.name).digest, broker: options.brokerURL, now: approvedAt)
        let approved = try await store.settleEvent(
            id: login.id, decision: RecordedDecision(status: .approved, deviceID: device.id, jws: jws, ip: address),
            now: approvedAt)
        guard ConsoleSessionRule.signIn(approved, consoleAppID: console.id, now: approvedAt + 5) == .signIn else {
            throw BenchFailure("the console login would not sign in")
        }
        // A day, not the console's hour: long enough for the runs.
        let signedIn = approvedAt + 5
        try await store.startConsoleSession(
            ConsoleSession(
                digest: SecretToken.digest(secret), operatorName: name, eventID: login.id, ip: address,
                createdAt: signedIn, expiresAt: signedIn + 86400),
            audit: AuditRecord(at: signedIn, actor: name, action: .signedIn, target: login.id, ip: address))
        return secret
    }
}
