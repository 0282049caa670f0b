import CountersignBroker
import CountersignCore
import CountersignSQLite
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// Listing and removing devices from a trusted device, and the audit log.
@Suite("device lifecycle: list, remove, audit")
struct DeviceLifecycleTests {
    func remove(
        _ client: some TestClientProtocol, _ broker: TestBroker, _ id: String, by device: TestDevice
    ) async throws -> TestResponse {
        try await client.execute(
            uri: "/api/v1/devices/\(id)", method: .delete,
            headers: try await device.proofHeaders(.delete, "/api/v1/devices/\(id)", now: broker.clock.now))
    }

    @Test("a device lists its user's devices, itself marked")
    func list() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let first = try await broker.enroll(client)
            let second = try await broker.enroll(client)
            _ = try await broker.enroll(client, user: "bob")
            let list = try await client.execute(
                uri: "/api/v1/devices", method: .get,
                headers: try await second.device.proofHeaders(.get, "/api/v1/devices", now: broker.clock.now)
            ) { try decode(DeviceListDocument.self, $0) }
            #expect(Set(list.devices.map(\.id)) == [first.device.id, second.device.id], "only alice's devices")
            #expect(list.thisDevice == second.device.id)
        }
    }

    @Test("a trusted device removes another of its user's devices: at once, recorded, its approvals refused")
    func removeAnother() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let old = try await broker.enroll(client)
            let new = try await broker.enroll(client)
            let ticket = try await broker.requestLogin(client)
            let item = try #require(try await broker.inbox(client, old.device).first)

            let response = try await remove(client, broker, old.device.id, by: new.device)
            #expect(response.status == .ok, "\(String(buffer: response.body))")
            #expect(try decode(DeviceDocument.self, response).revokedAt != nil)

            let late = try await old.device.decision(
                on: item, .approve, match: ticket.matchNumber, now: broker.clock.now)
            let refused = try await broker.submit(client, eventID: ticket.event.ID, decision: late)
            #expect(refused.status == .forbidden && errorCode(refused) == "device_revoked")
            #expect(try await broker.poll(client, ticket).status == .pending, "the request still waits")

            let changes = try await client.execute(
                uri: "/api/v1/users/alice/device-changes", method: .get, headers: broker.backendHeaders
            ) { try decode([String: [DeviceChangeDocument]].self, $0)["changes"]! }
            #expect(changes.first?.action == .revoked && changes.first?.deviceID == old.device.id)
            #expect(changes.first?.actor == new.device.id, "recorded as the removing device's doing")
            #expect(changes.count == 3 && changes.dropFirst().allSatisfy { $0.action == .enrolled })
        }
    }

    @Test("another user's device cannot remove it; an unknown id is 404; a removed device can remove nothing")
    func refusals() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let alice = try await broker.enroll(client)
            let aliceSecond = try await broker.enroll(client)
            let bob = try await broker.enroll(client, user: "bob")
            let foreign = try await remove(client, broker, alice.device.id, by: bob.device)
            #expect(foreign.status == .notFound)
            #expect(try await remove(client, broker, "no-such-device", by: alice.device).status == .notFound)
            #expect(try await remove(client, broker, alice.device.id, by: alice.device).status == .ok, "itself")
            let afterwards = try await remove(client, broker, aliceSecond.device.id, by: alice.device)
            #expect(afterwards.status == .unauthorized && errorCode(afterwards) == "device_revoked")
            let devices = try await broker.store.devices(issuer: broker.apiKeyID, clientUserID: "alice")
            #expect(devices.filter { $0.revokedAt == nil }.map(\.id) == [aliceSecond.device.id])
        }
    }
}
