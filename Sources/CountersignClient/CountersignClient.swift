public import CountersignCore
import Crypto
public import Foundation
import NIOHTTP1

/// The calls a requester and a trusted device make.
///
/// A requester (a machine not trusted yet) creates a pending event with the
/// app's API key id and waits for its outcome; a trusted device signs a
/// proof for each call and decisions for the events it answers.
public struct CountersignClient: Sendable {
    public let connection: BrokerConnection
    /// The app's API key id.
    public let apiKeyID: String

    public init(broker: String, apiKeyID: String, userAgent: String = BrokerConnection.defaultUserAgent) {
        self.init(connection: BrokerConnection(baseURL: broker, userAgent: userAgent), apiKeyID: apiKeyID)
    }

    /// A client over a connection you configured.
    public init(connection: BrokerConnection, apiKeyID: String) {
        self.connection = connection
        self.apiKeyID = apiKeyID
    }

    /// The client for the account a device credential belongs to.
    public init(for credential: DeviceCredential, userAgent: String = BrokerConnection.defaultUserAgent) {
        self.init(broker: credential.broker, apiKeyID: credential.apiKeyID, userAgent: userAgent)
    }

    // MARK: Requester

    struct CreateEvent: Encodable {
        var clientUserID: String?
        var event: String?
        var requesterName: String?
        var details: String?
        var newDevice: NewDevice?
        enum CodingKeys: String, CodingKey {
            case event, details
            case clientUserID = "client_user_id"
            case requesterName = "requester_name"
            case newDevice = "new_device"
        }
    }

    /// Asks a trusted device of `user` to approve a login from this machine.
    public func requestLogin(user: String, requesterName: String?) async throws -> EventTicket {
        try await connection.send(
            .POST, "/api/v1/events", headers: [("API_KEY_ID", apiKeyID)],
            body: CreateEvent(clientUserID: user, event: EventName.login, requesterName: requesterName),
            as: EventTicket.self)
    }

    /// Asks a trusted device of the credential's user to add this machine's
    /// key (not enrolled yet) as a trusted device; the ticket's
    /// `matchNumber` is the pairing code to show, and its outcome tells
    /// this machine when it is trusted.
    public func requestPairing(_ credential: DeviceCredential, type: String = "cli") async throws -> EventTicket {
        let path = "/api/v1/events"
        return try await connection.send(
            .POST, path,
            headers: [
                ("API_KEY_ID", apiKeyID), try await proofHeader(credential, .POST, path, name: "New-Device-Proof"),
            ],
            body: CreateEvent(
                clientUserID: credential.clientUserID, event: EventName.enrollNewTrustedDevice,
                requesterName: credential.name,
                newDevice: NewDevice(publicKey: credential.publicKey, name: credential.name, type: type)),
            as: EventTicket.self)
    }

    /// Reads a pending event, held by the broker up to `wait` seconds until
    /// it is decided.
    public func poll(eventID: String, requesterToken: String, wait: Int) async throws -> EventDocument {
        try await connection.send(
            .GET, "/api/v1/events/\(eventID)?wait=\(wait)", headers: [("Authorization", "Bearer \(requesterToken)")],
            timeout: TimeInterval(wait + 15), as: EventDocument.self)
    }

    /// Withdraws this requester's pending event: its trusted devices no
    /// longer see it and it can no longer be approved. Returns the event
    /// as it is then; a decision that landed first stands (`already_decided`).
    @discardableResult
    public func withdraw(_ ticket: EventTicket) async throws -> EventDocument {
        guard let token = ticket.requesterToken else { return ticket.event }
        return try await connection.send(
            .DELETE, "/api/v1/events/\(ticket.event.ID)", headers: [("Authorization", "Bearer \(token)")],
            timeout: 5, as: EventDocument.self)
    }

    /// Waits until the event is settled or its window closes, polling in
    /// slices of at most 25 s (under common proxies' 60 s timeout). A
    /// broker restarting or an instance going away costs a retry, not the
    /// outcome: unreachable brokers and 502/503/504 answers are retried
    /// until the window has closed.
    public func awaitOutcome(of ticket: EventTicket) async throws -> EventDocument {
        guard let token = ticket.requesterToken else { return ticket.event }
        var event = ticket.event
        while event.status == .pending {
            do {
                event = try await poll(eventID: event.ID, requesterToken: token, wait: 25)
            } catch let error as CountersignError where error.isTransient && Date() < ticket.event.expiresAt + 10 {
                try await Task.sleep(for: .milliseconds(250))
            }
        }
        return event
    }

    // MARK: Trusted device

    struct EnrollRequest: Encodable {
        let clientUserID: String
        var enrollmentToken: String?
        var recoveryCode: String?
        let publicKey: DevicePublicKey
        let name: String
        let type: String
        enum CodingKeys: String, CodingKey {
            case name, type
            case clientUserID = "client_user_id"
            case enrollmentToken = "enrollment_token"
            case recoveryCode = "recovery_code"
            case publicKey = "public_key"
        }
    }

    /// Enrolls `credential`'s key as a trusted device with a one-time token.
    public func enroll(_ credential: DeviceCredential, enrollmentToken: String, type: String = "cli") async throws
        -> DeviceDocument
    {
        try await enroll(credential, type: type) { $0.enrollmentToken = enrollmentToken }
    }

    /// Enrolls `credential`'s key with one of the user's recovery codes
    /// (for a user who lost their trusted devices); the code is used up.
    public func enroll(_ credential: DeviceCredential, recoveryCode: String, type: String = "cli") async throws
        -> DeviceDocument
    {
        try await enroll(credential, type: type) { $0.recoveryCode = recoveryCode }
    }

    private func enroll(_ credential: DeviceCredential, type: String, grant: (inout EnrollRequest) -> Void)
        async throws -> DeviceDocument
    {
        let path = "/api/v1/enrollments"
        var body = EnrollRequest(
            clientUserID: credential.clientUserID, publicKey: credential.publicKey, name: credential.name, type: type)
        grant(&body)
        return try await connection.send(
            .POST, path, headers: [("API_KEY_ID", apiKeyID), try await proofHeader(credential, .POST, path)],
            body: body, as: DeviceDocument.self)
    }

    /// A login from the trusted device itself: approved at once, unless the
    /// app requires user verification; then it is pending (with a requester
    /// token) until a device approves it with its passkey.
    public func loginAsTrustedDevice(_ credential: DeviceCredential, event: String = EventName.login) async throws
        -> EventTicket
    {
        let path = "/api/v1/events"
        return try await connection.send(
            .POST, path, headers: [try await proofHeader(credential, .POST, path)],
            body: CreateEvent(clientUserID: credential.clientUserID, event: event), as: EventTicket.self)
    }

    /// The pending events this device may decide; held up to `wait` seconds
    /// while there are none.
    public func inbox(_ credential: DeviceCredential, wait: Int) async throws -> [InboxItem] {
        try await inbox(credential, wait: wait, unchangedFrom: nil).events
    }

    /// The pending events this device may decide, held up to `wait`
    /// seconds while they are still the set an earlier answer's `state`
    /// named (with nil, while there are none): returns as soon as one is
    /// added or one ends. ``InboxWatcher`` follows them this way.
    public func inbox(_ credential: DeviceCredential, wait: Int, unchangedFrom state: String?) async throws
        -> InboxSnapshot
    {
        let path = "/api/v1/inbox"
        let query = "?wait=\(wait)" + (state.map { "&state=\(CountersignBackend.escape($0))" } ?? "")
        return try await connection.send(
            .GET, path + query, headers: [try await proofHeader(credential, .GET, path)],
            timeout: TimeInterval(wait + 15), as: InboxSnapshot.self)
    }

    /// One event of this device's user, whatever its state: whether it is
    /// still pending, or was approved, rejected, withdrawn or has expired.
    /// Another user's event fails as not found.
    public func event(_ eventID: String, credential: DeviceCredential) async throws -> EventDocument {
        let path = "/api/v1/inbox/\(CountersignBackend.escape(eventID))"
        return try await connection.send(
            .GET, path, headers: [try await proofHeader(credential, .GET, path)], as: EventDocument.self)
    }

    /// This device as the broker knows it; fails if it was removed.
    public func whoAmI(_ credential: DeviceCredential) async throws -> DeviceDocument {
        let path = "/api/v1/devices/self"
        return try await connection.send(
            .GET, path, headers: [try await proofHeader(credential, .GET, path)], as: DeviceDocument.self)
    }

    /// The user's devices, revoked ones included; `thisDevice` is the caller.
    public func devices(_ credential: DeviceCredential) async throws -> DeviceListDocument {
        let path = "/api/v1/devices"
        return try await connection.send(
            .GET, path, headers: [try await proofHeader(credential, .GET, path)], as: DeviceListDocument.self)
    }

    /// Revokes one of the user's devices (or this one), signed by this device.
    public func removeDevice(_ deviceID: String, credential: DeviceCredential) async throws -> DeviceDocument {
        let path = "/api/v1/devices/\(CountersignBackend.escape(deviceID))"
        return try await connection.send(
            .DELETE, path, headers: [try await proofHeader(credential, .DELETE, path)], as: DeviceDocument.self)
    }

    /// Signs and sends a decision on one inbox item, committing to what the
    /// item shows (for a pairing, also to the key it would add).
    ///
    /// For an event that requires user verification, `assertion` gets an
    /// assertion of the device's passkey for the challenge it is given:
    /// SHA-256 of the signed decision's signing input (proto/signing.md §10).
    public func decide(
        _ item: InboxItem, verdict: Verdict, match: String?, credential: DeviceCredential,
        assertion: ((_ challenge: Data) async throws -> PasskeyAssertion)? = nil
    ) async throws -> EventDocument {
        struct Body: Encodable {
            let decision: String
            let assertion: PasskeyAssertion?
        }
        let jws = try await DecisionProof.make(
            key: credential.privateKey, on: item, verdict: verdict, match: match, broker: connection.baseURL,
            now: Date())
        let signed = try await assertion?(try PasskeyAssertion.challenge(for: jws))
        return try await connection.send(
            .POST, "/api/v1/events/\(item.event.ID)/decision", body: Body(decision: jws, assertion: signed),
            as: EventDocument.self)
    }

    /// Gives this device a passkey that protects its approvals (or replaces
    /// the one it has): `make` gets the challenge, SHA-256 of the signing
    /// input of this request's device proof, and returns the registration,
    /// with an assertion of the passkey in place for the same challenge
    /// when there is one (proto/signing.md §10). Returns the device with it.
    public func registerPasskey(
        _ credential: DeviceCredential,
        make: (_ challenge: Data) async throws -> (PasskeyRegistration, replacing: PasskeyAssertion?)
    ) async throws -> DeviceDocument {
        struct Body: Encodable {
            let registration: PasskeyRegistration
            let assertion: PasskeyAssertion?
            enum Keys: String, CodingKey { case assertion }
            func encode(to encoder: any Encoder) throws {
                try registration.encode(to: encoder)
                var container = encoder.container(keyedBy: Keys.self)
                try container.encodeIfPresent(assertion, forKey: .assertion)
            }
        }
        let path = "/api/v1/devices/self/passkey"
        let proof = try await proofHeader(credential, .PUT, path)
        let (registration, assertion) = try await make(try PasskeyAssertion.challenge(for: proof.1))
        return try await connection.send(
            .PUT, path, headers: [proof], body: Body(registration: registration, assertion: assertion),
            as: DeviceDocument.self)
    }

    func proofHeader(
        _ credential: DeviceCredential, _ method: HTTPMethod, _ path: String, name: String = "Device-Proof"
    ) async throws -> (String, String) {
        (
            name,
            try await DeviceProof.make(
                key: credential.privateKey, method: method.rawValue, url: connection.url(path), now: Date())
        )
    }
}
