import CountersignCore
import CountersignStore
import Foundation
import Hummingbird
import NIOCore

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
            .get("audit/export", use: auditExport)
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
        /// The person as the directory lists them, if it does.
        let directory: DirectoryDocument?
    }

    struct DirectoryDocument: Encodable, Sendable {
        let dn: String
        let name: String?
        let email: String?
        let groups: [String]
        let state: DirectoryPerson.State
        let changedAt: Date
        enum CodingKeys: String, CodingKey {
            case dn, name, email, groups, state
            case changedAt = "changed_at"
        }

        init(_ person: DirectoryPerson) {
            (dn, name, email, groups, state, changedAt) = (
                person.dn, person.name, person.email, person.groups, person.state, person.changedAt
            )
        }
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
        return JSONBody(
            UserDocument(
                user: user, apps: apps,
                directory: try await store.directoryPerson(clientUserID: user).map(DirectoryDocument.init)))
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
        /// What the target is called: an app's or a device's name.
        let targetName: String?
        /// The user the target is or belongs to, to link to their page.
        let user: String?
        /// The app (API key id) the target is or belongs to.
        let app: String?
        enum CodingKeys: String, CodingKey {
            case id, at, actor, action, target, ip, user, app
            case targetName = "target_name"
        }
    }

    /// The audit log, newest first, `limit` lines a page (`?before=ID`),
    /// by the filters of ``auditQuery(_:)``; each target named.
    @Sendable func audit(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<AuditPage> {
        var before: Int64? = nil
        if let text = request.uri.queryParameters["before"] {
            guard let id = Int64(text), id > 0 else { throw APIError.badRequest("before must be an audit line's id") }
            before = id
        }
        let limit = try request.limit()
        let query = try Self.auditQuery(request)
        let records = try await environment.store.auditRecords(query, before: before, limit: limit)
        let names = Dictionary(
            try await environment.store.apiKeys().map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        var lines: [AuditLine] = []
        for record in records { lines.append(try await line(record, appNames: names)) }
        return JSONBody(AuditPage(records: lines, next: records.count == limit ? records.last?.id : nil))
    }

    /// A line with its target named: an app by its name, a device by its
    /// name and its user, an app's user or an operator by who they are.
    func line(_ record: AuditRecord, appNames: [String: String]) async throws -> AuditLine {
        var (name, user, app): (String?, String?, String?) = (nil, nil, nil)
        if let target = record.target {
            switch record.action {
            case .apiKeyCreated, .apiKeyRotated, .apiKeyRevoked:
                (name, app) = (appNames[target], target)
            case .approverGroupSet, .approverGroupDeleted:
                // `ck_…/payments`: the app and its group's name.
                if let slash = target.firstIndex(of: "/") {
                    app = String(target[..<slash])
                    name = app.flatMap { appNames[$0] }.map { "\($0) · \(target[target.index(after: slash)...])" }
                }
            case .enrollmentIssued, .fraudProtectionEnded, .invitationSent, .invitationResent, .invitationWithdrawn:
                if let slash = target.firstIndex(of: "/") {
                    app = String(target[..<slash])
                    user = String(target[target.index(after: slash)...])
                    name = app.flatMap { appNames[$0] }.map { "\($0) · \(user ?? "")" }
                } else {
                    user = target
                }
            case .deviceRemoved:
                if let device = try await environment.store.device(id: target) {
                    (name, user, app) = (device.name, device.clientUserID, device.issuer)
                }
            case .operatorAdded, .operatorRemoved:
                (user, app) = (target, ConsoleApp.apiKeyID)
            case .userSuspended, .userReinstated:
                user = target
            case .signedIn, .signedOut, .signInRefused, .webhookResent, .endpointDisabled, .endpointEnabled,
                .radiusClientAdded, .radiusClientChanged, .radiusClientRemoved:
                break
            }
        }
        return AuditLine(
            id: record.id, at: record.at, actor: record.actor, action: record.action.rawValue, target: record.target,
            ip: record.ip, targetName: name, user: user, app: app)
    }

    /// The audit log's lines that the filters find, oldest first, as JSON
    /// lines (as `device-broker audit export` prints them), up to 100,000.
    @Sendable func auditExport(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let query = try Self.auditQuery(request)
        var records: [AuditRecord] = []
        var before: Int64? = nil
        while records.count < ConsoleSearchReads.exportCap {
            let page = try await environment.store.auditRecords(query, before: before, limit: 1000)
            records += page
            guard page.count == 1000, let last = page.last?.id else { break }
            before = last
        }
        var buffer = ByteBuffer()
        for record in records.prefix(ConsoleSearchReads.exportCap).reversed() {
            buffer.writeBytes(record.wireJSON())
            buffer.writeString("\n")
        }
        let stamp = Int(environment.now().timeIntervalSince1970)
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/x-ndjson",
                .contentDisposition: "attachment; filename=\"countersign-audit-\(stamp).jsonl\"",
                .cacheControl: "no-store",
            ], body: .init(byteBuffer: buffer))
    }

    /// The audit filters: `actor`, `action`, `target` (each exactly),
    /// `from` and `to` (RFC 3339, `from` inclusive). 400 for an action
    /// that is none of the log's, or a time that cannot be read.
    static func auditQuery(_ request: Request) throws -> AuditQuery {
        var query = AuditQuery(actor: request.filter("actor"), target: request.filter("target"))
        if let action = request.filter("action") {
            guard let parsed = AuditRecord.Action(rawValue: action) else {
                throw APIError.badRequest(
                    "action must be one of " + AuditRecord.Action.allCases.map(\.rawValue).joined(separator: ", "))
            }
            query.action = parsed
        }
        query.from = try request.time("from")
        query.to = try request.time("to")
        return query
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
        // Counted, not read: reading up to 2,000 messages with their
        // payloads took 110 ms of the 112 ms of a health reading at
        // 100,000 events.
        let queued = available ? try await store.outboxMessageCount(targets: nil, state: .queued, cap: cap) : 0
        let failed = available ? try await store.outboxMessageCount(targets: nil, state: .failed, cap: cap) : 0
        return HealthDocument(
            version: CountersignVersion.current, instance: ProcessInfo.processInfo.hostName,
            readAt: environment.now(), storeAvailable: available, longPollsHeld: environment.hub.held,
            outboxQueued: queued, outboxFailed: failed, outboxCountCap: cap)
    }
}
