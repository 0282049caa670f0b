import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let quorumPolicyCases: [Case] = [
        Case(name: "quorum policies: set per event name, replaced, listed, deleted; not for a revoked key") { store in
            try await Fixture.apiKey("ck_app", in: store)
            let login = QuorumPolicy(
                issuer: "ck_app", event: "LOGIN", users: ["alice", "bob"], group: nil, requiredApprovals: 2,
                allowRequester: false, updatedAt: Fixture.t0, updatedVia: "rest")
            try check(try await store.apiKey(id: "ck_app")?.quorumPolicyEvents == [], "no policy yet")
            try check(try await store.putQuorumPolicy(login), "new")
            try check(try await store.apiKey(id: "ck_app")?.quorumPolicyEvents == ["LOGIN"], "the key names it")
            try check(try await store.quorumPolicy(issuer: "ck_app", event: "LOGIN") == login, "read back")
            var byGroup = login
            byGroup.users = nil
            byGroup.group = "cn=ops,ou=groups,dc=example,dc=org"
            byGroup.requiredApprovals = 3
            byGroup.allowRequester = true
            byGroup.updatedAt = Fixture.t0 + 5
            try check(try await store.putQuorumPolicy(byGroup) == false, "replaced")
            try check(try await store.quorumPolicy(issuer: "ck_app", event: "LOGIN") == byGroup, "every field")
            let transaction = QuorumPolicy(
                issuer: "ck_app", event: "TRANSACTION", users: ["carol"], group: nil, requiredApprovals: 1,
                allowRequester: false, updatedAt: Fixture.t0, updatedVia: "rest")
            try await store.putQuorumPolicy(transaction)
            try check(
                try await store.quorumPolicies(issuer: "ck_app").map(\.event) == ["LOGIN", "TRANSACTION"], "by name")
            try check(
                try await store.apiKey(id: "ck_app")?.quorumPolicyEvents == ["LOGIN", "TRANSACTION"], "both named")
            try check(try await store.quorumPolicy(issuer: "ck_other", event: "LOGIN") == nil, "one app's")
            try await store.deleteQuorumPolicy(issuer: "ck_app", event: "LOGIN")
            try check(try await store.quorumPolicy(issuer: "ck_app", event: "LOGIN") == nil, "deleted")
            try check(try await store.apiKey(id: "ck_app")?.quorumPolicyEvents == ["TRANSACTION"], "no longer named")
            try await checkThrows(.notFound, "deleting it twice") {
                try await store.deleteQuorumPolicy(issuer: "ck_app", event: "LOGIN")
            }
            try await checkThrows(.notFound, "an unknown key's") {
                var other = transaction
                other.issuer = "ck_nobody"
                try await store.putQuorumPolicy(other)
            }
        }
    ]
}
