import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let approverGroupCases: [Case] = [
        Case(name: "approver groups: set, replaced, listed by name, deleted; per app; not for a revoked key") { store in
            try await Fixture.apiKey("ck_app", in: store)
            try await Fixture.apiKey("ck_other", in: store)
            let payments = ApproverGroup(
                issuer: "ck_app", name: "payments", users: ["carol", "alice", "bob"], updatedAt: Fixture.t0,
                updatedVia: "rest")
            try check(try await store.putApproverGroup(payments), "new")
            try check(try await store.approverGroup(issuer: "ck_app", name: "payments") == payments, "read back")
            var replaced = payments
            replaced.users = ["dave"]
            replaced.updatedAt = Fixture.t0 + 5
            replaced.updatedVia = "cli"
            try check(try await store.putApproverGroup(replaced) == false, "replaced, not new")
            try check(try await store.approverGroup(issuer: "ck_app", name: "payments") == replaced, "replaced")
            let deploy = ApproverGroup(
                issuer: "ck_app", name: "Deploy", users: ["erin"], updatedAt: Fixture.t0, updatedVia: "rest")
            try await store.putApproverGroup(deploy)
            try await store.putApproverGroup(
                ApproverGroup(
                    issuer: "ck_other", name: "payments", users: ["x"], updatedAt: Fixture.t0, updatedVia: "rest"))
            try check(
                try await store.approverGroups(issuer: "ck_app").map(\.name) == ["Deploy", "payments"],
                "by name, in byte order, one app's")
            try check(try await store.approverGroup(issuer: "ck_app", name: "Payments") == nil, "names are exact")
            try await store.deleteApproverGroup(issuer: "ck_app", name: "payments")
            try check(try await store.approverGroup(issuer: "ck_app", name: "payments") == nil, "deleted")
            try check(
                try await store.approverGroup(issuer: "ck_other", name: "payments") != nil, "the other app's stays")
            try await checkThrows(.notFound, "deleting it twice") {
                try await store.deleteApproverGroup(issuer: "ck_app", name: "payments")
            }
            _ = try await store.revokeAPIKey(
                id: "ck_other", change: APIKeyChange(apiKeyID: "ck_other", action: .revoked, via: "cli", at: Fixture.t0)
            )
            try await checkThrows(.notFound, "a revoked key's") {
                try await store.putApproverGroup(
                    ApproverGroup(
                        issuer: "ck_other", name: "new", users: ["x"], updatedAt: Fixture.t0, updatedVia: "rest"))
            }
            try await checkThrows(.notFound, "an unknown key's") {
                try await store.putApproverGroup(
                    ApproverGroup(
                        issuer: "ck_nobody", name: "new", users: ["x"], updatedAt: Fixture.t0, updatedVia: "rest"))
            }
        }
    ]
}
