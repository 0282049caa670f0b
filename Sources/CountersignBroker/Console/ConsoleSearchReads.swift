import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Finding people and events in the console: the user list by prefix,
/// and the event search with its export.
struct ConsoleSearchReads {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<ConsoleRequestContext> {
        RouteCollection(context: ConsoleRequestContext.self)
            .get("users", use: users)
            .get("events", use: events)
            .get("events/export", use: export)
    }

    struct UserLine: Encodable, Sendable {
        let user: String
        let apps: [String]
        let devices: Int
        let activeDevices: Int
        let lastSeenAt: Date?
        /// As the directory has them, for people it lists.
        let name: String?
        let email: String?
        let directory: DirectoryPerson.State?
        enum CodingKeys: String, CodingKey {
            case user, apps, devices, name, email, directory
            case activeDevices = "active_devices"
            case lastSeenAt = "last_seen_at"
        }

        init(_ id: String, _ summary: UserSummary?, _ person: DirectoryPerson?) {
            user = id
            apps = summary?.issuers ?? []
            devices = summary?.devices ?? 0
            activeDevices = summary?.activeDevices ?? 0
            lastSeenAt = summary?.lastSeenAt
            name = person?.name
            email = person?.email
            directory = person?.state
        }
    }

    struct UserPage: Encodable, Sendable {
        let users: [UserLine]
        /// The `after` that reads the next page; nil on the last.
        let next: String?
    }

    /// The users with a device and the people the directory lists, by
    /// id in byte order: `?prefix=` (case counts), `limit` a page, the
    /// next from `?after=`.
    @Sendable func users(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<UserPage> {
        // Any text will do: one no user id starts with (too long, a
        // slash) finds nobody.
        let prefix = request.uri.queryParameters["prefix"].map(String.init) ?? ""
        let after = request.uri.queryParameters["after"].map(String.init)
        let limit = try request.limit()
        // The first page of each, merged: whoever is among the first
        // `limit` of both is among the first `limit` of their own.
        let summaries = try await environment.store.users(prefix: prefix, after: after, limit: limit)
        let people = try await environment.store.directoryPeople(prefix: prefix, after: after, limit: limit)
        let byID = Dictionary(summaries.map { ($0.clientUserID, $0) }, uniquingKeysWith: { first, _ in first })
        let peopleByID = Dictionary(people.map { ($0.clientUserID, $0) }, uniquingKeysWith: { first, _ in first })
        let ids = Set(byID.keys).union(peopleByID.keys).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            .prefix(limit)
        return JSONBody(
            UserPage(
                users: ids.map { UserLine($0, byID[$0], peopleByID[$0]) }, next: ids.count == limit ? ids.last : nil))
    }

    struct EventPage: Encodable, Sendable {
        let events: [EventDocument]
        /// The names of the devices that decided them, by id.
        let devices: [String: String]
        /// The `cursor` that reads the next (older) page; nil on the last.
        let next: String?
    }

    /// Events across every app, newest first, by the filters of
    /// ``query(_:)``; `limit` a page, the next from `?cursor=`.
    @Sendable func events(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<EventPage> {
        let query = try Self.query(request)
        let limit = try request.limit()
        let now = environment.now()
        let events = try await environment.store.searchEvents(query, now: now, limit: limit)
        var devices: [String: String] = [:]
        for id in Set(events.compactMap(\.decidedBy)) {
            if let device = try await environment.store.device(id: id) { devices[id] = device.name }
        }
        return JSONBody(
            EventPage(
                events: events.map { EventDocument($0, now: now, signature: nil) }, devices: devices,
                next: events.count == limit ? events.last.map { PageCursor(after: $0).text } : nil))
    }

    /// The most lines an export writes: a day of a busy broker.
    static let exportCap = 100_000

    /// What the search finds, every page of it up to ``exportCap`` lines,
    /// as CSV (`?format=csv`, a header line first) or JSON lines
    /// (`?format=jsonl`, the event documents), streamed as read.
    @Sendable func export(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let query = try Self.query(request)
        let format = request.uri.queryParameters["format"].map(String.init) ?? "csv"
        guard format == "csv" || format == "jsonl" else { throw APIError.badRequest("format must be csv or jsonl") }
        let environment = environment
        let now = environment.now()
        let names = Dictionary(
            try await environment.store.apiKeys().map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        // The first page is read before the answer starts, so a store
        // that is away is a 503, not a cut-off file.
        let page = 1000
        let first = try await environment.store.searchEvents(query, now: now, limit: page)
        let body = ResponseBody { [query] writer in
            var query = query
            var events = first
            var written = 0
            if format == "csv" { try await writer.write(ByteBuffer(string: CSVField.line(Self.csvHeader))) }
            while true {
                var buffer = ByteBuffer()
                for event in events.prefix(Self.exportCap - written) {
                    if format == "csv" {
                        buffer.writeString(CSVField.line(Self.csvFields(event, app: names[event.issuer], now: now)))
                    } else {
                        buffer.writeBytes(EventDocument(event, now: now, signature: nil).wireJSON())
                        buffer.writeString("\n")
                    }
                }
                written += min(events.count, Self.exportCap - written)
                try await writer.write(buffer)
                guard events.count == page, written < Self.exportCap, let last = events.last else { break }
                query.after = PageCursor(after: last)
                events = try await environment.store.searchEvents(query, now: now, limit: page)
            }
            try await writer.finish(nil)
        }
        let stamp = Int(now.timeIntervalSince1970)
        return Response(
            status: .ok,
            headers: [
                .contentType: format == "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson",
                .contentDisposition: "attachment; filename=\"countersign-events-\(stamp).\(format)\"",
                .cacheControl: "no-store",
            ], body: body)
    }

    static let csvHeader = [
        "created_at", "id", "app", "app_id", "user", "type", "status", "status_reason", "channel", "requester",
        "ip", "location", "method", "decided_at", "decided_by", "details",
    ]

    static func csvFields(_ event: ApprovalEvent, app: String?, now: Date) -> [String] {
        let time = { (date: Date?) in date.map { $0.formatted(.iso8601) } ?? "" }
        return [
            time(event.createdAt), event.id, app ?? "", event.issuer, event.clientUserID, event.name,
            event.status(at: now).rawValue, event.statusReason?.rawValue ?? "", event.channel.rawValue,
            event.requesterName ?? "", event.ip, event.location, event.method.rawValue, time(event.decidedAt),
            event.decidedBy ?? "", event.details ?? "",
        ]
    }

    /// The search's filters from the query: `user`, `app` (API key id),
    /// `status`, `type`, `channel`, `address`, `from` and `to` (RFC 3339,
    /// `from` inclusive), `cursor` (a page's `next`). 400 for a status,
    /// channel, time or cursor that cannot be read.
    static func query(_ request: Request) throws -> EventQuery {
        // A value no event holds finds none: only what cannot be read is refused.
        var query = EventQuery(
            issuer: request.filter("app"), clientUserID: request.filter("user"), name: request.filter("type"),
            ip: request.filter("address"))
        if let status = request.filter("status") {
            guard let parsed = EventStatus(rawValue: status) else {
                throw APIError.badRequest("status must be pending, approved, rejected or expired")
            }
            query.status = parsed
        }
        if let channel = request.filter("channel") {
            guard let parsed = EventChannel(rawValue: channel) else {
                throw APIError.badRequest(
                    "channel must be one of " + EventChannel.allCases.map(\.rawValue).joined(separator: ", "))
            }
            query.channel = parsed
        }
        query.from = try request.time("from")
        query.to = try request.time("to")
        if let cursor = request.filter("cursor") {
            guard let parsed = PageCursor(text: cursor) else {
                throw APIError.badRequest("cursor must be the next of an earlier page", code: .invalidCursor)
            }
            query.after = parsed
        }
        return query
    }
}
