import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let radiusCases: [Case] = [
        Case(name: "RADIUS: a client is added to a live API key, listed, changed and removed, each change audited") {
            store in
            try await Fixture.apiKey("ck_app", in: store)
            func audit(_ action: AuditRecord.Action, _ name: String, at offset: TimeInterval) -> AuditRecord {
                AuditRecord(at: Fixture.t0 + offset, actor: AuditRecord.host, action: action, target: name)
            }
            let vpn = RADIUSClient(
                name: "office-vpn", network: "192.0.2.0/24", apiKeyID: "ck_app", secret: RADIUSClient.newSecret(),
                createdAt: Fixture.t0)
            var wifi = RADIUSClient(
                name: "wifi", network: "2001:db8::/32", apiKeyID: "ck_app", secret: RADIUSClient.newSecret(),
                mode: .push,
                requireMessageAuthenticator: false, createdAt: Fixture.t0 + 1)
            try await store.insertRADIUSClient(wifi, audit: audit(.radiusClientAdded, "wifi", at: 1))
            try await store.insertRADIUSClient(vpn, audit: audit(.radiusClientAdded, "office-vpn", at: 2))
            try check(try await store.radiusClients() == [vpn, wifi], "read back as written, by name")
            try await checkThrows(.alreadyExists, "a name taken") {
                try await store.insertRADIUSClient(vpn, audit: audit(.radiusClientAdded, "office-vpn", at: 3))
            }
            var stray = vpn
            stray.name = "stray"
            stray.apiKeyID = "ck_nobody"
            try await checkThrows(.notFound, "a client of an unknown API key") {
                try await store.insertRADIUSClient(stray, audit: audit(.radiusClientAdded, "stray", at: 3))
            }
            wifi.secret = RADIUSClient.newSecret()
            wifi.network = "10.0.0.0/8"
            wifi.mode = .challenge
            wifi.requireMessageAuthenticator = true
            wifi.upstream = RADIUSClient.Upstream(
                address: "[2001:db8::5]:1812", secret: RADIUSClient.newSecret(), requireMessageAuthenticator: false)
            try await store.updateRADIUSClient(wifi, audit: audit(.radiusClientChanged, "wifi", at: 4))
            try check(try await store.radiusClients() == [vpn, wifi], "every field written, the upstream too")
            wifi.upstream = nil
            try await store.updateRADIUSClient(wifi, audit: audit(.radiusClientChanged, "wifi", at: 4.5))
            try check(try await store.radiusClients() == [vpn, wifi], "the upstream taken off")
            try await checkThrows(.notFound, "changing an unknown client") {
                try await store.updateRADIUSClient(stray, audit: audit(.radiusClientChanged, "stray", at: 5))
            }
            try await store.deleteRADIUSClient(
                name: "office-vpn", audit: audit(.radiusClientRemoved, "office-vpn", at: 6))
            try check(try await store.radiusClients() == [wifi], "removed")
            try await checkThrows(.notFound, "removing it twice") {
                try await store.deleteRADIUSClient(
                    name: "office-vpn", audit: audit(.radiusClientRemoved, "office-vpn", at: 7))
            }
            let log = try await store.auditRecords(after: nil, limit: 10).map {
                "\($0.action.rawValue) \($0.target ?? "")"
            }
            try check(
                log == [
                    "radius_client.added wifi", "radius_client.added office-vpn", "radius_client.changed wifi",
                    "radius_client.changed wifi", "radius_client.removed office-vpn",
                ], "each change audited once, refusals not at all: \(log)")

            try await Fixture.apiKey("ck_gone", in: store)
            _ = try await store.revokeAPIKey(
                id: "ck_gone", change: APIKeyChange(apiKeyID: "ck_gone", action: .revoked, via: "cli", at: Fixture.t0))
            stray.apiKeyID = "ck_gone"
            try await checkThrows(.notFound, "a client of a revoked API key") {
                try await store.insertRADIUSClient(stray, audit: audit(.radiusClientAdded, "stray", at: 8))
            }
        }
    ]
}
