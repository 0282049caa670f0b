import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let deviceCases: [Case] = [
        Case(name: "enrollment: a token enrolls one device once") { store in
            let digest = try await Fixture.enrollmentToken(in: store)
            let first = Fixture.device()
            try await store.enrollDevice(first, consumingToken: digest, author: Fixture.author, now: Fixture.t0 + 1)
            try check(try await store.device(id: first.id) == first, "the device reads back")
            try await checkThrows(.notFound, "a used token") {
                try await store.enrollDevice(
                    Fixture.device(), consumingToken: digest, author: Fixture.author, now: Fixture.t0 + 2)
            }
        },
        Case(name: "enrollment: wrong user, wrong app, expired and unknown tokens enroll nothing") { store in
            let digest = try await Fixture.enrollmentToken(in: store)
            let mallory = Fixture.device(user: "mallory")
            try await checkThrows(.notFound, "token of another user") {
                try await store.enrollDevice(mallory, consumingToken: digest, author: Fixture.author, now: Fixture.t0)
            }
            try await checkThrows(.notFound, "token of another app") {
                try await store.enrollDevice(
                    Fixture.device(issuer: "ck_other"), consumingToken: digest, author: Fixture.author, now: Fixture.t0)
            }
            try await checkThrows(.notFound, "expired token") {
                try await store.enrollDevice(
                    Fixture.device(), consumingToken: digest, author: Fixture.author, now: Fixture.t0 + 600)
            }
            try await checkThrows(.notFound, "unknown token") {
                try await store.enrollDevice(
                    Fixture.device(), consumingToken: Data(count: 32), author: Fixture.author, now: Fixture.t0)
            }
            try check(try await store.device(id: mallory.id) == nil, "nothing was enrolled")
            // The failures did not use the token up.
            try await store.enrollDevice(
                Fixture.device(), consumingToken: digest, author: Fixture.author, now: Fixture.t0 + 1)
        },
        Case(name: "enrollment: an enrolled key is refused and the token stays usable") { store in
            let device = try await Fixture.enrolled(in: store)
            let digest = try await Fixture.enrollmentToken(in: store)
            try await checkThrows(.alreadyExists, "same key twice") {
                try await store.enrollDevice(device, consumingToken: digest, author: Fixture.author, now: Fixture.t0)
            }
            try await store.enrollDevice(
                Fixture.device(), consumingToken: digest, author: Fixture.author, now: Fixture.t0)
        },
        Case(name: "enrollment: a token used by eight enrollments at once enrolls one device") { store in
            let digest = try await Fixture.enrollmentToken(in: store)
            let outcomes = await withTaskGroup(of: StoreError.Code?.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        do {
                            try await store.enrollDevice(
                                Fixture.device(), consumingToken: digest, author: Fixture.author, now: Fixture.t0)
                            return nil
                        } catch {
                            return (error as? StoreError)?.code ?? .backend
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            try check(outcomes.filter { $0 == nil }.count == 1, "one enrollment: \(outcomes)")
            try check(outcomes.allSatisfy { $0 == nil || $0 == .notFound }, "the others find no token: \(outcomes)")
            try check(try await store.devices(issuer: "ck_app", clientUserID: "alice").count == 1, "one device")
        },
        Case(name: "devices: listed per user, revocation keeps its first time") { store in
            let a = try await Fixture.enrolled(in: store)
            let b = try await Fixture.enrolled(in: store)
            _ = try await Fixture.enrolled(in: store, user: "bob")
            let listed = try await store.devices(issuer: "ck_app", clientUserID: "alice")
            try check(Set(listed.map(\.id)) == [a.id, b.id], "alice has her two devices")
            try await checkThrows(.notFound, "revoking through another user") {
                try await store.revokeDevice(
                    id: a.id, issuer: "ck_app", clientUserID: "bob", author: Fixture.author, now: Fixture.t0)
            }
            try await checkThrows(.notFound, "revoking through another app") {
                try await store.revokeDevice(
                    id: a.id, issuer: "ck_other", clientUserID: "alice", author: Fixture.author, now: Fixture.t0)
            }
            let revoked = try await store.revokeDevice(
                id: a.id, issuer: "ck_app", clientUserID: "alice", author: Fixture.author, now: Fixture.t0 + 5)
            try check(revoked.revokedAt == Fixture.t0 + 5, "revoked at the given time")
            let again = try await store.revokeDevice(
                id: a.id, issuer: "ck_app", clientUserID: "alice", author: Fixture.author, now: Fixture.t0 + 9)
            try check(again.revokedAt == Fixture.t0 + 5, "a second revocation keeps the first time")
            try check(try await store.device(id: b.id)?.revokedAt == nil, "the other device is untouched")
        },
        Case(name: "first devices: only while the user has no unrevoked device") { store in
            let first = Fixture.device(user: "dave")
            try await store.enrollFirstDevice(first, author: Fixture.author, now: Fixture.t0)
            try check(try await store.device(id: first.id) == first, "enrolled")
            let second = Fixture.device(user: "dave")
            try await checkThrows(.conflict, "a second first device") {
                try await store.enrollFirstDevice(second, author: Fixture.author, now: Fixture.t0)
            }
            try check(try await store.device(id: second.id) == nil, "nothing enrolled")
            try await store.enrollFirstDevice(
                Fixture.device(issuer: "ck_other", user: "dave"), author: Fixture.author, now: Fixture.t0)
            _ = try await store.revokeDevice(
                id: first.id, issuer: "ck_app", clientUserID: "dave", author: Fixture.author, now: Fixture.t0 + 1)
            try await store.enrollFirstDevice(second, author: Fixture.author, now: Fixture.t0 + 2)
            // Revoked keys stay enrolled: the same key cannot come back as a first device.
            _ = try await store.revokeDevice(
                id: second.id, issuer: "ck_app", clientUserID: "dave", author: Fixture.author, now: Fixture.t0 + 3)
            try await checkThrows(.alreadyExists, "an enrolled key") {
                try await store.enrollFirstDevice(second, author: Fixture.author, now: Fixture.t0 + 4)
            }
        },
        Case(name: "devices: last seen only moves forward") { store in
            let device = try await Fixture.enrolled(in: store)
            try await store.markDeviceSeen(id: device.id, now: Fixture.t0 + 10)
            try await store.markDeviceSeen(id: device.id, now: Fixture.t0 + 5)
            try check(try await store.device(id: device.id)?.lastSeenAt == Fixture.t0 + 10, "last seen is the latest")
        },
        Case(name: "passkeys: set, read back whole, replaced, removed; one device per credential") { store in
            let device = try await Fixture.enrolled(in: store)
            let other = try await Fixture.enrolled(in: store)
            let passkey = Fixture.passkey()
            try await store.setPasskey(passkey, deviceID: device.id, by: Fixture.author, at: Fixture.t0)
            try check(try await store.device(id: device.id)?.passkey == passkey, "the passkey reads back")
            try check(
                try await store.devices(issuer: "ck_app", clientUserID: "alice").first { $0.id == device.id }?.passkey
                    == passkey, "and in the user's list")
            try await checkThrows(.alreadyExists, "another device with the same credential") {
                try await store.setPasskey(passkey, deviceID: other.id, by: Fixture.author, at: Fixture.t0)
            }
            try check(try await store.device(id: other.id)?.passkey == nil, "nothing set on the other device")
            let replacement = Fixture.passkey(signCount: 0, transports: [])
            try await store.setPasskey(replacement, deviceID: device.id, by: Fixture.author, at: Fixture.t0)
            try check(try await store.device(id: device.id)?.passkey == replacement, "replaced")
            try await store.setPasskey(passkey, deviceID: other.id, by: Fixture.author, at: Fixture.t0)
            try await store.setPasskey(nil, deviceID: other.id, by: Fixture.author, at: Fixture.t0)
            try check(try await store.device(id: other.id)?.passkey == nil, "removed")
            // Each change is in the user's device log; removing none is no change.
            try await store.setPasskey(nil, deviceID: other.id, by: Fixture.author, at: Fixture.t0)
            let changes = try await store.deviceChanges(issuer: "ck_app", clientUserID: "alice", limit: 20)
            try check(
                changes.filter { $0.deviceID == device.id }.map(\.action) == [.passkeyAdded, .passkeyAdded, .enrolled],
                "the device's log: \(changes.map(\.action))")
            try check(
                changes.filter { $0.deviceID == other.id }.map(\.action) == [
                    .passkeyRemoved, .passkeyAdded, .enrolled,
                ],
                "the other's log: \(changes.map(\.action))")
            try check(changes.allSatisfy { $0.author == Fixture.author }, "by whom")
            try await checkThrows(.notFound, "an unknown device") {
                try await store.setPasskey(passkey, deviceID: "no-such-device", by: Fixture.author, at: Fixture.t0)
            }
        },
        Case(name: "passkeys: a use's counter is kept only going up, and only for the passkey in place") { store in
            let device = try await Fixture.enrolled(in: store)
            let passkey = Fixture.passkey(signCount: 41)
            try await store.setPasskey(passkey, deviceID: device.id, by: Fixture.author, at: Fixture.t0)
            try await store.advancePasskeySignCount(deviceID: device.id, credentialID: passkey.credentialID, to: 42)
            try check(try await store.device(id: device.id)?.passkey?.signCount == 42, "kept")
            for stale in [UInt32(42), 7, 0] {
                try await checkThrows(.conflict, "a counter of \(stale) after 42") {
                    try await store.advancePasskeySignCount(
                        deviceID: device.id, credentialID: passkey.credentialID, to: stale)
                }
            }
            try await checkThrows(.conflict, "another credential") {
                try await store.advancePasskeySignCount(deviceID: device.id, credentialID: "another", to: 50)
            }
            try check(try await store.device(id: device.id)?.passkey?.signCount == 42, "unchanged by refusals")
            // An authenticator that keeps no counter: 0, and 0 again.
            let counterless = Fixture.passkey(signCount: 0, transports: [])
            try await store.setPasskey(counterless, deviceID: device.id, by: Fixture.author, at: Fixture.t0)
            try await store.advancePasskeySignCount(deviceID: device.id, credentialID: counterless.credentialID, to: 0)
        },
        Case(name: "passkeys: revoking the device removes its passkey, and a revoked device takes none") { store in
            let device = try await Fixture.enrolled(in: store)
            let passkey = Fixture.passkey()
            try await store.setPasskey(passkey, deviceID: device.id, by: Fixture.author, at: Fixture.t0)
            _ = try await store.revokeDevice(
                id: device.id, issuer: "ck_app", clientUserID: "alice", author: Fixture.author, now: Fixture.t0 + 1)
            try check(try await store.device(id: device.id)?.passkey == nil, "removed with the device")
            try await checkThrows(.conflict, "a revoked device") {
                try await store.setPasskey(passkey, deviceID: device.id, by: Fixture.author, at: Fixture.t0)
            }
            // Its credential id is free again, for the device that replaces it.
            let next = try await Fixture.enrolled(in: store)
            try await store.setPasskey(passkey, deviceID: next.id, by: Fixture.author, at: Fixture.t0)
        },
    ]
}
