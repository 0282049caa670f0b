import CountersignCore
import CountersignStore
import Foundation
import Hummingbird

/// What the console shows: each a read of the store, across all apps,
/// paged or capped where a list can grow.
struct ConsoleReads {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<ConsoleRequestContext> {
        RouteCollection(context: ConsoleRequestContext.self)
            .get("session", use: session)
            .get("users/:user", use: user)
            .get("apps", use: apps)
            .get("audit", use: audit)
            .get("health", use: health)
    }

    /// Who is signed in, until when, and the CSRF token the page sends
    /// with each change (also after a reload, which forgets it).
    @Sendable func session(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        ConsoleController.SessionDocument
    > {
        JSONBody(ConsoleController.SessionDocument(context.signedIn.session, secret: context.signedIn.secret))
    }

    /// One app's view of a user: devices, recent events, decisions.
    struct UserAtApp: Encodable, Sendable {
        let apiKeyID: String
        let app: String
        let devices: [DeviceDocument]
        let events: [EventDocument]
        let decisions: [EventDocument]
        enum CodingKeys: String, CodingKey {
            case app, devices, events, decisions
            case apiKeyID = "api_key_id"
        }
    }

    struct UserDocument: Encodable, Sendable {
        let user: String
        let apps: [UserAtApp]
    }

    /// A user across every app: the apps where they have a device, an
    /// event or a decision, each with up to `limit` events and decisions,
    /// newest first; with `?before=` (RFC 3339), those made before it.
    @Sendable func user(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<UserDocument> {
        let user = try context.parameters.userID()
        let limit = try request.limit()
        let before = try request.time("before")
        let store = environment.store
        let now = environment.now()
        var apps: [UserAtApp] = []
        for key in try await store.apiKeys() {
            let devices = try await store.devices(issuer: key.id, clientUserID: user)
            let events =
                if let before {
                    try await store.events(issuer: key.id, clientUserID: user, before: before, limit: limit)
                } else {
                    try await store.events(issuer: key.id, clientUserID: user, status: nil, now: now, limit: limit)
                }
            let decisions =
                if let before {
                    try await store.decisionRecords(issuer: key.id, clientUserID: user, before: before, limit: limit)
                } else {
                    try await store.decisionRecords(issuer: key.id, clientUserID: user, limit: limit)
                }
            guard !devices.isEmpty || !events.isEmpty || !decisions.isEmpty else { continue }
            var documents: [EventDocument] = []
            for event in events { documents.append(try await environment.document(for: event, withToken: false)) }
            apps.append(
                UserAtApp(
                    apiKeyID: key.id, app: key.name, devices: devices.map(DeviceDocument.init), events: documents,
                    decisions: try decisions.map {
                        try WireCoding.decoder().decode(EventDocument.self, from: $0.document)
                    }))
        }
        return JSONBody(UserDocument(user: user, apps: apps))
    }

    struct AppDocument: Encodable, Sendable {
        let id: String
        let name: String
        let createdAt: Date
        let revokedAt: Date?
        let userVerification: String
        let console: Bool
        enum CodingKeys: String, CodingKey {
            case id, name, console
            case createdAt = "created_at"
            case revokedAt = "revoked_at"
            case userVerification = "user_verification"
        }

        init(_ key: APIKey) {
            id = key.id
            name = key.name
            createdAt = key.createdAt
            revokedAt = key.revokedAt
            userVerification = key.userVerification.rawValue
            console = key.id == ConsoleApp.apiKeyID
        }
    }

    struct AppList: Encodable, Sendable { let apps: [AppDocument] }

    /// The apps (API keys), revoked ones too; never their secrets.
    @Sendable func apps(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<AppList> {
        let keys = try await environment.store.apiKeys()
        return JSONBody(AppList(apps: keys.map(AppDocument.init)))
    }

    struct AuditPage: Encodable, Sendable {
        let records: [AuditLine]
        /// The `before` that reads the next (older) page; nil on the last.
        let next: Int64?
    }

    struct AuditLine: Encodable, Sendable {
        let id: Int64?
        let at: Date
        let actor: String
        let action: String
        let target: String?
        let ip: String?

        init(_ record: AuditRecord) {
            (id, at, actor, action, target, ip) = (
                record.id, record.at, record.actor, record.action.rawValue, record.target, record.ip
            )
        }
    }

    /// The audit log, newest first, `limit` lines a page (`?before=ID`).
    @Sendable func audit(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<AuditPage> {
        var before: Int64? = nil
        if let text = request.uri.queryParameters["before"] {
            guard let id = Int64(text), id > 0 else { throw APIError.badRequest("before must be an audit line's id") }
            before = id
        }
        let limit = try request.limit()
        let records = try await environment.store.auditRecords(before: before, limit: limit)
        return JSONBody(
            AuditPage(records: records.map(AuditLine.init), next: records.count == limit ? records.last?.id : nil))
    }

    struct HealthDocument: Encodable, Sendable {
        let version: String
        /// The host this instance runs on: which of several answered.
        let instance: String
        let readAt: Date
        let storeAvailable: Bool
        let longPollsHeld: Int
        /// Messages waiting to be sent, counted up to ``outboxCountCap``.
        let outboxQueued: Int
        let outboxFailed: Int
        let outboxCountCap: Int
        enum CodingKeys: String, CodingKey {
            case version, instance
            case readAt = "read_at"
            case storeAvailable = "store_available"
            case longPollsHeld = "long_polls_held"
            case outboxQueued = "outbox_queued"
            case outboxFailed = "outbox_failed"
            case outboxCountCap = "outbox_count_cap"
        }
    }

    /// This instance's health: what /readyz and /metrics read.
    @Sendable func health(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<
        HealthDocument
    > {
        JSONBody(try await healthDocument())
    }

    func healthDocument() async throws -> HealthDocument {
        let cap = 1000
        let store = environment.store
        var available = true
        if let remote = store as? any StoreHealthReporting {
            available = await remote.probe(within: OperationsController.readinessDeadline)
        }
        let queued = available ? try await store.outboxMessages(state: .queued, limit: cap).count : 0
        let failed = available ? try await store.outboxMessages(state: .failed, limit: cap).count : 0
        return HealthDocument(
            version: CountersignVersion.current, instance: ProcessInfo.processInfo.hostName,
            readAt: environment.now(), storeAvailable: available, longPollsHeld: environment.hub.held,
            outboxQueued: queued, outboxFailed: failed, outboxCountCap: cap)
    }
}
