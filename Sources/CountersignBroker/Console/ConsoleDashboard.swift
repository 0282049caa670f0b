import CountersignCore
import CountersignStore
import Foundation
import Hummingbird

/// The console's first view: what happened in the last hour and day, who
/// is under attack now, and this instance's health against thresholds.
struct ConsoleDashboard {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<ConsoleRequestContext> {
        RouteCollection(context: ConsoleRequestContext.self).get("dashboard", use: dashboard)
    }

    struct Totals: Encodable, Sendable {
        let total: Int
        let pending: Int
        let approved: Int
        let rejected: Int
        let expired: Int
        let fraudReported: Int
        let totpFallbacks: Int
        enum CodingKeys: String, CodingKey {
            case total, pending, approved, rejected, expired
            case fraudReported = "fraud_reported"
            case totpFallbacks = "totp_fallbacks"
        }

        init(_ totals: EventTotals) {
            (total, pending, approved, rejected, expired) = (
                totals.total, totals.pending, totals.approved, totals.rejected, totals.expired
            )
            fraudReported = totals.fraudReported
            totpFallbacks = totals.totpFallbacks
        }
    }

    struct Group: Encodable, Sendable {
        let key: String
        let totals: Totals
    }

    struct Window: Encodable, Sendable {
        let name: String
        let since: Date
        let totals: Totals
        let byApp: [Group]
        let byChannel: [Group]
        enum CodingKeys: String, CodingKey {
            case name, since, totals
            case byApp = "by_app"
            case byChannel = "by_channel"
        }
    }

    struct Check: Encodable, Sendable {
        let name: String
        let value: Int
        let warning: Int
        let critical: Int
        let state: String

        init(_ check: HealthCheck) {
            (name, value, warning, critical, state) = (
                check.name, check.value, check.warning, check.critical, check.state.rawValue
            )
        }
    }

    struct Document: Encodable, Sendable {
        let windows: [Window]
        let watch: ConsoleWatchReads.WatchDocument
        let health: ConsoleReads.HealthDocument
        let checks: [Check]
        /// The worst of the checks' states.
        let state: String
    }

    /// The last hour and the last day (by app and by channel), the five
    /// users and addresses requesters asked for or from most, running
    /// fraud protections, and the health checks.
    @Sendable func dashboard(_ request: Request, context: ConsoleRequestContext) async throws -> JSONBody<Document> {
        let health = try await ConsoleReads(environment: environment).healthDocument()
        let now = environment.now()
        let store = environment.store
        var windows: [Window] = []
        var watch = ConsoleWatchReads.WatchDocument(
            protections: [], users: [], addresses: [],
            windowSeconds: Int(environment.policy.pendingLimits.rateWindow))
        var protections = 0
        // With the store away, the health says so; there is nothing else to read.
        if health.storeAvailable {
            for (name, since) in [("hour", now - 3600), ("day", now - 86_400)] {
                let tallies = try await store.eventTallies(since: since, now: now)
                let (all, byApp) = EventTotals.of(tallies, by: \.issuer)
                let byChannel = EventTotals.of(tallies, by: \.channel.rawValue).groups
                windows.append(
                    Window(
                        name: name, since: since, totals: Totals(all),
                        byApp: byApp.map { Group(key: $0.key, totals: Totals($0.totals)) },
                        byChannel: byChannel.map { Group(key: $0.key, totals: Totals($0.totals)) }))
            }
            watch = try await ConsoleWatchReads(environment: environment).document(limit: 5)
            protections = try await store.activeProtections(now: now, limit: 1000).count
        }
        let checks = HealthCheck.reading(
            storeAvailable: health.storeAvailable, outboxQueued: health.outboxQueued,
            outboxFailed: health.outboxFailed, protections: protections)
        return JSONBody(
            Document(
                windows: windows, watch: watch, health: health, checks: checks.map(Check.init),
                state: (checks.map(\.state).max() ?? .ok).rawValue))
    }
}
