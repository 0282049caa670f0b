public import CountersignCore
public import Foundation
import NIOHTTP1

/// The calls an app backend makes with its API key id and secret key.
public struct CountersignBackend: Sendable {
    public let connection: BrokerConnection
    let authorization: (String, String)

    public init(broker: String, apiKeyID: String, apiSecretKey: String) {
        self.init(connection: BrokerConnection(baseURL: broker), apiKeyID: apiKeyID, apiSecretKey: apiSecretKey)
    }

    /// A backend client over a connection you configured.
    public init(connection: BrokerConnection, apiKeyID: String, apiSecretKey: String) {
        self.connection = connection
        self.authorization = (
            "Authorization", "Basic " + Data("\(apiKeyID):\(apiSecretKey)".utf8).base64EncodedString()
        )
    }

    /// A one-time token that lets `user` enroll a first device.
    public struct EnrollmentGrant: Decodable, Sendable {
        public let token: String
        public let clientUserID: String
        public let expiresAt: Date
        enum CodingKeys: String, CodingKey {
            case token
            case clientUserID = "client_user_id"
            case expiresAt = "expires_at"
        }
    }

    /// Asks for a one-time enrollment token for `user`.
    public func createEnrollmentToken(user: String) async throws -> EnrollmentGrant {
        try await connection.send(
            .POST, "/api/v1/users/\(Self.escape(user))/enrollment-tokens", headers: [authorization],
            body: [String: String](), as: EnrollmentGrant.self)
    }

    /// Asks `user`'s trusted devices to approve something (a `TRANSACTION`
    /// by default), shown to the approver with `details`, and with the
    /// requesting machine's name and the end user's address if given.
    /// With `limitAsRequester` (and `ip`), for a client the backend does not
    /// vouch for: the limits of a requester at `ip` apply, and so does a
    /// user's "this wasn't me" (429 `user_protected`). With
    /// `userVerification`, only an approval with the deciding device's
    /// passkey, its owner verified, settles it as approved. With
    /// `approvers` (users, or a directory group), several people must
    /// approve it instead of `user`'s devices: `approvers.required` distinct
    /// ones of them (proto/signing.md §11; check the outcome with
    /// ``verifyQuorum(of:app:pinnedKeys:approvers:requiredApprovals:allowRequester:pinnedPasskeys:)``).
    public func requestApproval(
        user: String, event: String = EventName.transaction, details: String? = nil, numberMatching: Bool = true,
        requesterName: String? = nil, ip: String? = nil, limitAsRequester: Bool = false,
        userVerification: Bool = false, approvers: Approvers? = nil
    ) async throws -> EventTicket {
        struct Body: Encodable {
            let client_user_id: String
            let event: String
            let details: String?
            let number_matching: Bool
            let requester_name: String?
            let ip: String?
            let limit_as_requester: Bool?
            let user_verification: String?
            let approvers: Approvers?
        }
        return try await connection.send(
            .POST, "/api/v1/events", headers: [authorization],
            body: Body(
                client_user_id: user, event: event, details: details, number_matching: numberMatching,
                requester_name: requesterName, ip: ip, limit_as_requester: limitAsRequester ? true : nil,
                user_verification: userVerification ? "required" : nil, approvers: approvers),
            as: EventTicket.self)
    }

    /// Who must approve an event, and how many of them.
    public struct Approvers: Encodable, Sendable {
        let users: [String]?
        let group: String?
        let required: Int
        let allowRequester: Bool

        enum CodingKeys: String, CodingKey {
            case users, group
            case required = "required_approvals"
            case allowRequester = "allow_requester"
        }

        /// `required` of `users`; the user the event names counts only with `allowRequester`.
        public static func users(_ users: [String], required: Int, allowRequester: Bool = false) -> Approvers {
            Approvers(users: users, group: nil, required: required, allowRequester: allowRequester)
        }

        /// `required` of the members of a directory group (by name or DN).
        public static func group(_ group: String, required: Int, allowRequester: Bool = false) -> Approvers {
            Approvers(users: nil, group: group, required: required, allowRequester: allowRequester)
        }
    }

    /// One event, held up to `wait` seconds until it is settled.
    public func event(id: String, wait: Int = 0) async throws -> EventDocument {
        try await connection.send(
            .GET, "/api/v1/events/\(id)?wait=\(wait)", headers: [authorization], timeout: TimeInterval(wait + 15),
            as: EventDocument.self)
    }

    /// A user's events, newest first.
    public func events(user: String, status: EventStatus? = nil) async throws -> [EventDocument] {
        struct List: Decodable { let events: [EventDocument] }
        let query = status.map { "?status=\($0.rawValue)" } ?? ""
        return try await connection.send(
            .GET, "/api/v1/users/\(Self.escape(user))/events\(query)", headers: [authorization], as: List.self
        ).events
    }

    /// A user's devices, revoked ones included.
    public func devices(user: String) async throws -> [DeviceDocument] {
        struct List: Decodable { let devices: [DeviceDocument] }
        return try await connection.send(
            .GET, "/api/v1/users/\(Self.escape(user))/devices", headers: [authorization], as: List.self
        ).devices
    }

    /// Revokes a device at once; its pending approvals are refused from now on.
    public func revokeDevice(user: String, deviceID: String) async throws -> DeviceDocument {
        try await connection.send(
            .DELETE, "/api/v1/users/\(Self.escape(user))/devices/\(deviceID)", headers: [authorization],
            as: DeviceDocument.self)
    }

    /// The user's device audit log, newest first.
    public func deviceChanges(user: String) async throws -> [DeviceChangeDocument] {
        struct List: Decodable { let changes: [DeviceChangeDocument] }
        return try await connection.send(
            .GET, "/api/v1/users/\(Self.escape(user))/device-changes", headers: [authorization], as: List.self
        ).changes
    }

    /// Checks, without trusting the broker, that a device whose key you
    /// pinned (from the `device.enrolled` webhook or ``devices(user:)`` when
    /// it enrolled) signed this event's verdict over exactly the words the
    /// event shows for your app, named `app` as approvers see it. Throws
    /// ``ProtocolError`` (`wrong_display`, `wrong_device`, `wrong_verdict`, …)
    /// if anything differs; returns the device's signed claims. An event
    /// that required user verification also needs the passkey assertion it
    /// carries to be of a passkey pinned for the deciding device in
    /// `pinnedPasskeys` (by device id, each device's passkeys from the
    /// `device.passkey_added` webhooks or the devices' `passkey`), its
    /// owner verified, over this decision.
    public func verifyDecision(
        of event: EventDocument, app: String, pinnedKeys: [DevicePublicKey],
        pinnedPasskeys: [String: [PasskeyDocument]] = [:]
    ) async throws(ProtocolError) -> DecisionClaims {
        try await DecisionProof.check(
            storedIn: event, app: app, pinnedKeys: pinnedKeys, broker: connection.baseURL,
            pinnedPasskeys: pinnedPasskeys)
    }

    /// Checks, without trusting the broker, that an event you asked
    /// several people to approve was approved by at least
    /// `requiredApprovals` distinct users of `approvers`, each with a device
    /// whose key you pinned for that user (`pinnedKeys`, by user id, from
    /// the `device.enrolled` webhooks or ``devices(user:)``), over exactly
    /// the words the event shows for your app, named `app` as approvers see
    /// it (proto/signing.md §11). Pass the approvers and the number you
    /// asked for, not the ones the event says. The user the event names
    /// counts only with `allowRequester`. Throws ``ProtocolError``
    /// (`too_few_approvals`, `wrong_display`, `wrong_device`, …); returns
    /// the approvals that counted, one per approver.
    public func verifyQuorum(
        of event: EventDocument, app: String, pinnedKeys: [String: [DevicePublicKey]], approvers: [String],
        requiredApprovals: Int, allowRequester: Bool = false, pinnedPasskeys: [String: [PasskeyDocument]] = [:]
    ) async throws(ProtocolError) -> [DecisionProof.CountedApproval] {
        try await DecisionProof.checkQuorum(
            storedIn: event, app: app, pinnedKeys: pinnedKeys, approvers: approvers,
            requiredApprovals: requiredApprovals, allowRequester: allowRequester, broker: connection.baseURL,
            pinnedPasskeys: pinnedPasskeys)
    }

    static func escape(_ segment: String) -> String {
        segment.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? segment
    }
}
