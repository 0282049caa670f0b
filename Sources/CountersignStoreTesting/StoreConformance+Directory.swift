import CountersignCore
import CountersignStore
import Foundation
import Synchronization

extension StoreConformance {
    static let directoryCases: [Case] = [
        Case(
            name:
                "directory: the updater writes the person, suspends and reinstates every app's devices, logs and tells"
        ) { store in
            try await Fixture.apiKey("ck_app", in: store)
            try await Fixture.apiKey("ck_other", in: store)
            let endpoint = Fixture.endpoint(types: [.deviceSuspended, .deviceReinstated])
            try await store.insertWebhookEndpoint(endpoint)
            let laptop = try await Fixture.enrolled(in: store, user: "bob")
            let phone = try await Fixture.enrolled(in: store, issuer: "ck_other", user: "bob")
            let old = try await Fixture.enrolled(in: store, user: "bob")
            _ = try await store.revokeDevice(
                id: old.id, issuer: "ck_app", clientUserID: "bob", author: Fixture.author, now: Fixture.t0 + 1)
            let other = try await Fixture.enrolled(in: store, user: "bobby")
            let t1 = Fixture.t0 + 60
            let disabled = DirectoryPerson(
                clientUserID: "bob", dn: "uid=bob,ou=people,dc=example,dc=org", name: "Bob", email: "bob@example.org",
                groups: ["cn=vpn,ou=groups,dc=example,dc=org", "cn=b"], state: .disabled, changedAt: t1)
            let seen = Mutex<DirectoryUserState?>(nil)
            let suspended = try await store.updateDirectoryPerson(clientUserID: "bob") { state in
                seen.withLock { $0 = state }
                return DirectorySync.change(state, to: disabled, now: t1)
            }
            let read = seen.withLock { $0 }
            try check(read?.person == nil, "nobody kept before")
            try check(Set(read?.devices.map(\.id) ?? []) == [laptop.id, phone.id, old.id], "every app's, revoked too")
            try check(Set(suspended.devices) == [laptop.id, phone.id], "the revoked one left alone")
            try check(try await store.directoryPerson(clientUserID: "bob") == disabled, "every field written")
            try check(try await store.device(id: laptop.id)?.suspendedAt == t1, "suspended, at the time")
            try check(try await store.device(id: phone.id)?.suspendedAt == t1, "in the other app too")
            try check(try await store.device(id: old.id)?.suspendedAt == nil, "not the removed device")
            try check(try await store.device(id: other.id)?.suspendedAt == nil, "not another user's")
            try check(
                try await store.deviceChanges(issuer: "ck_app", clientUserID: "bob", limit: 10).first?.action
                    == .suspended, "in the device log")
            let audit = try await store.auditRecords(before: nil, limit: 10)
            try check(
                audit.first?.action == .userSuspended && audit.first?.actor == "directory"
                    && audit.first?.target == "bob", "audited: \(audit)")

            let active = DirectoryPerson(
                clientUserID: "bob", dn: disabled.dn, name: "Bob", email: nil, groups: [], state: .active,
                changedAt: t1 + 60)
            let t2 = t1 + 60
            let reinstated = try await store.updateDirectoryPerson(clientUserID: "bob") {
                DirectorySync.change($0, to: active, now: t2)
            }
            try check(Set(reinstated.devices) == [laptop.id, phone.id], "both back")
            try check(try await store.device(id: laptop.id)?.suspendedAt == nil, "acting again")
            try check(try await store.directoryPerson(clientUserID: "bob")?.state == .active, "written")
            let sent = try await Fixture.webhooks(in: store, to: endpoint.id).map(\.type)
            try check(sent == ["device.suspended", "device.reinstated"], "told, for its app's device: \(sent)")

            // What the rule throws changes nothing.
            struct Refused: Error {}
            do {
                _ = try await store.updateDirectoryPerson(clientUserID: "bob") { _ in throw Refused() }
                try check(false, "the refusal reaches the caller")
            } catch is Refused {}
            try check(try await store.directoryPerson(clientUserID: "bob")?.state == .active, "nothing written")
        },
        Case(name: "directory: people listed by id, by prefix in byte order, paged; a NUL finds nobody") { store in
            for id in ["alice", "alicia", "Alina", "bob"] {
                _ = try await store.updateDirectoryPerson(clientUserID: id) {
                    DirectorySync.change(
                        $0,
                        to: DirectoryPerson(
                            clientUserID: id, dn: "uid=\(id)", name: nil, email: nil, groups: [], state: .active,
                            changedAt: Fixture.t0), now: Fixture.t0)
                }
            }
            try check(
                try await store.directoryPeople().map(\.clientUserID) == ["Alina", "alice", "alicia", "bob"],
                "all, in byte order")
            try check(
                try await store.directoryPeople(prefix: "ali", after: nil, limit: 10).map(\.clientUserID)
                    == ["alice", "alicia"], "by prefix, case counting")
            try check(
                try await store.directoryPeople(prefix: "", after: "alice", limit: 2).map(\.clientUserID)
                    == ["alicia", "bob"], "after the cursor, a page")
            try check(try await store.directoryPeople(prefix: "ali\0", after: nil, limit: 10).isEmpty, "a NUL")
            try check(try await store.directoryPerson(clientUserID: "carol") == nil, "nobody unread")
        },
    ]
}
