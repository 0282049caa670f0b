import CountersignCore
import CountersignStore
import Crypto
import Foundation

/// A failed conformance check, with where it failed.
public struct ConformanceFailure: Error, CustomStringConvertible {
    public let message: String
    public let location: String
    public var description: String { "\(location): \(message)" }
}

func check(
    _ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
) throws {
    if !condition { throw ConformanceFailure(message: message(), location: "\(file):\(line)") }
}

@discardableResult
func checkThrows<T>(
    _ code: StoreError.Code, _ what: String, file: StaticString = #fileID, line: UInt = #line,
    _ body: () async throws -> T
) async throws -> StoreError {
    do {
        _ = try await body()
    } catch let error as StoreError {
        try check(error.code == code, "\(what): expected \(code), got \(error.code)", file: file, line: line)
        return error
    }
    throw ConformanceFailure(message: "\(what): expected \(code), nothing was thrown", location: "\(file):\(line)")
}

/// Test data shared by the conformance cases.
enum Fixture {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    /// Who the conformance cases say made a device change.
    static let author = ChangeAuthor(actor: "test", ip: "192.0.2.1")

    /// A passkey as a registration makes it (the store keeps what it is given).
    static func passkey(signCount: UInt32 = 41, transports: [String] = ["internal", "hybrid"]) -> Passkey {
        Passkey(
            credentialID: SecretToken.generate(bytes: 20),
            publicKey: DevicePublicKey(P256.Signing.PrivateKey().publicKey),
            signCount: signCount, aaguid: UUID(), transports: transports, backupEligible: true, createdAt: t0 + 0.5)
    }

    static func device(issuer: String = "ck_app", user: String = "alice", at: Date = t0) -> TrustedDevice {
        let key = P256.Signing.PrivateKey()
        return TrustedDevice(
            publicKey: DevicePublicKey(key.publicKey), issuer: issuer, clientUserID: user, name: "laptop",
            type: "cli", createdAt: at)
    }

    static func event(
        issuer: String = "ck_app", user: String = "alice", at: Date = t0, window: TimeInterval = 60,
        match: String? = "42"
    ) -> ApprovalEvent {
        ApprovalEvent(
            id: ApprovalEvent.newID(), createdAt: at, updatedAt: at, issuer: issuer, clientUserID: user,
            name: EventName.login, ip: "127.0.0.1", location: "Unknown", method: .trustedDevice,
            storedStatus: .pending, expiresAt: at + window, details: nil, requesterName: "new-laptop",
            nonce: SecretToken.generate(bytes: 16), matchNumber: match, wrongMatches: 0,
            requesterTokenDigest: SecretToken.digest("requester"), decidedBy: nil, decidedAt: nil, decision: nil)
    }

    /// A pending pairing of `user`: an enrolled device to approve it, and
    /// the new device it asks to add.
    static func pairing(in store: any CountersignStore, user: String) async throws -> (
        approver: TrustedDevice, candidate: TrustedDevice, event: ApprovalEvent
    ) {
        let approver = try await enrolled(in: store, user: user)
        let candidate = device(user: user)
        var event = event(user: user)
        event.name = EventName.enrollNewTrustedDevice
        event.newDevice = NewDevice(publicKey: candidate.publicKey, name: "new-laptop", type: "cli")
        try await store.insertPendingEvent(event, maxPending: 3, now: t0)
        return (approver, candidate, event)
    }

    /// Enrolls a fresh device through a fresh token.
    static func enrolled(
        in store: any CountersignStore, issuer: String = "ck_app", user: String = "alice"
    ) async throws -> TrustedDevice {
        let device = device(issuer: issuer, user: user)
        let digest = try await enrollmentToken(in: store, issuer: issuer, user: user)
        try await store.enrollDevice(device, consumingToken: digest, author: Fixture.author, now: t0)
        return device
    }

    /// A fresh enrollment token for `user`, valid from t0 for ten minutes: its digest.
    static func enrollmentToken(
        in store: any CountersignStore, issuer: String = "ck_app", user: String = "alice"
    ) async throws -> Data {
        let digest = SecretToken.digest(SecretToken.generate())
        try await store.insertEnrollmentToken(
            EnrollmentToken(digest: digest, issuer: issuer, clientUserID: user, createdAt: t0, expiresAt: t0 + 600))
        return digest
    }
}

/// The changes the broker makes through the updater, made the same way
/// (`EventTransitions`): the rule in Core on the event as the transaction
/// reads it, `conflict` with that event when it no longer takes a change.
extension CountersignStore {
    func withdrawEvent(id: String, now: Date) async throws -> ApprovalEvent {
        try await updateEvent(id: id, spending: nil, now: now) { try open($0, at: now).withdrawn(at: now) }
    }

    func recordWrongMatch(id: String, maxWrong: Int, spending: SpentProofID?, now: Date) async throws
        -> ApprovalEvent
    {
        try await updateEvent(id: id, spending: spending, now: now) {
            try open($0, at: now).countingWrongMatch(maxWrong: maxWrong, at: now)
        }
    }
}

/// `event` if it takes a change at `now`, else `conflict` carrying it.
private func open(_ event: ApprovalEvent, at now: Date) throws -> ApprovalEvent {
    guard event.closure(at: now) == nil else {
        throw StoreError(.conflict, "event \(event.id) is no longer pending", event: event)
    }
    return event
}
