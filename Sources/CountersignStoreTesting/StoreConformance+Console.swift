import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let consoleCases: [Case] = [
        Case(name: "operators: added and removed once each, each change in the audit log with it") { store in
            let t0 = Fixture.t0
            let added = AuditRecord(at: t0, actor: AuditRecord.host, action: .operatorAdded, target: "alice")
            try await store.addOperator(Operator(name: "alice", addedAt: t0), audit: added)
            try await store.addOperator(
                Operator(name: "bob", addedAt: t0 + 1),
                audit: AuditRecord(at: t0 + 1, actor: AuditRecord.host, action: .operatorAdded, target: "bob"))
            try check(
                try await store.operators() == [
                    Operator(name: "alice", addedAt: t0), Operator(name: "bob", addedAt: t0 + 1),
                ],
                "listed by name")
            try await checkThrows(.alreadyExists, "alice again") {
                try await store.addOperator(Operator(name: "alice", addedAt: t0 + 2), audit: added)
            }
            let removed = AuditRecord(at: t0 + 3, actor: AuditRecord.host, action: .operatorRemoved, target: "alice")
            try await store.removeOperator(named: "alice", audit: removed)
            try await checkThrows(.notFound, "alice, gone") {
                try await store.removeOperator(named: "alice", audit: removed)
            }
            try check(try await store.operators().map(\.name) == ["bob"], "bob stays")
            let log = try await store.auditRecords(after: nil, limit: 10)
            try check(
                log.map(\.action) == [.operatorAdded, .operatorAdded, .operatorRemoved], "refusals wrote nothing")
            try check(log.first?.target == "alice" && log.first?.at == t0 && log.first?.actor == "host", "read back")
        },
        Case(name: "audit log: in order, paged by id, every field kept") { store in
            var ids: [Int64] = []
            for index in 0..<5 {
                let record = try await store.appendAudit(
                    AuditRecord(
                        at: Fixture.t0 + Double(index), actor: "alice", action: .signedIn, target: "ev_\(index)",
                        ip: "192.0.2.\(index)"))
                try check(record.id != nil, "an id is given")
                ids.append(record.id ?? 0)
            }
            try check(ids == ids.sorted() && Set(ids).count == 5, "ids go up")
            let first = try await store.auditRecords(after: nil, limit: 2)
            let rest = try await store.auditRecords(after: first.last?.id, limit: 10)
            try check(first.count == 2 && rest.count == 3, "two pages")
            try check((first + rest).map(\.id) == ids.map { Optional($0) }, "in order, none twice")
            try check(rest.last?.ip == "192.0.2.4" && rest.last?.target == "ev_4", "every field kept")
            try check(try await store.auditRecords(after: ids.last, limit: 10).isEmpty, "nothing after the last")
        },
    ]
}
