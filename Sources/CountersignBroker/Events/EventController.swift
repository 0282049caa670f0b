import CountersignCore
import CountersignStore
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

/// Creating events and collecting their outcome.
///
/// A trusted device's own request is approved at once, unless it requires
/// user verification. Anyone else creates a pending event that a trusted
/// device of the user must decide; only the creator (by its requester
/// token) and the app backend can read it.
struct EventController {
    let environment: BrokerEnvironment

    /// Creating: a trusted device, the backend, or a requester.
    var creatorEndpoints: RouteCollection<EventCreatorContext> {
        RouteCollection(context: EventCreatorContext.self)
            .post("events", use: create)
    }

    /// One event, for its requester or its backend.
    var holderEndpoints: RouteCollection<EventHolderContext> {
        RouteCollection(context: EventHolderContext.self)
            .get("events/:id", use: show)
            .delete("events/:id", use: withdraw)
    }

    struct CreateRequest: Decodable {
        var clientUserID: String?
        var event: String?
        var details: String?
        var requesterName: String?
        var ip: String?
        var location: String?
        var numberMatching: Bool?
        var newDevice: NewDevice?
        /// The backend asks for a client it does not vouch for, at `ip`.
        var limitAsRequester: Bool?
        /// `required`: only a user-verified passkey assertion approves it.
        var userVerification: String?
        /// Several people must approve it (M of N).
        var approvers: ApproversRequest?

        enum CodingKeys: String, CodingKey {
            case event, details, ip, location, approvers
            case clientUserID = "client_user_id"
            case requesterName = "requester_name"
            case numberMatching = "number_matching"
            case newDevice = "new_device"
            case limitAsRequester = "limit_as_requester"
            case userVerification = "user_verification"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            clientUserID = try container.decodeIfPresent(String.self, forKey: .clientUserID)
            event = try container.decodeIfPresent(String.self, forKey: .event)
            details = try container.decodeIfPresent(String.self, forKey: .details)
            requesterName = try container.decodeIfPresent(String.self, forKey: .requesterName)
            ip = try container.decodeIfPresent(String.self, forKey: .ip)
            location = try container.decodeIfPresent(String.self, forKey: .location)
            numberMatching = try container.decodeIfPresent(Bool.self, forKey: .numberMatching)
            newDevice = try container.decodeIfPresent(NewDevice.self, forKey: .newDevice)
            limitAsRequester = try container.decodeIfPresent(Bool.self, forKey: .limitAsRequester)
            userVerification = try container.decodeIfPresent(String.self, forKey: .userVerification)
            // A null quorum is refused, not read as none: a backend whose
            // lookup of approvers came back empty must not get an event
            // its own user approves alone.
            if container.contains(.approvers), try container.decodeNil(forKey: .approvers) {
                throw DecodingError.valueNotFound(
                    ApproversRequest.self,
                    .init(codingPath: [CodingKeys.approvers], debugDescription: "approvers is an object, not null"))
            }
            approvers = try container.decodeIfPresent(ApproversRequest.self, forKey: .approvers)
        }
    }

    /// Who must approve an event, as its backend asks: `users` or a
    /// directory `group`, and how many of them.
    struct ApproversRequest: Decodable {
        var users: [String]?
        var group: String?
        var requiredApprovals: Int?
        var allowRequester: Bool?

        enum CodingKeys: String, CodingKey {
            case users, group
            case requiredApprovals = "required_approvals"
            case allowRequester = "allow_requester"
        }
    }

    /// What an approver and the events list read of an event: nothing
    /// that is not shown as itself, each field checked or a 400.
    struct Shown {
        let details: String?
        let location: String?
        let ip: String?
        let requesterName: String?

        init(details: String?, location: String?, ip: String?, requesterName: String?) throws {
            self.details = try details.map(DisplayText.Field.details.require)
            self.location = try location.map(DisplayText.Field.location.require)
            self.ip = try ip.map { try DisplayText.requireAddress($0, field: "ip") }
            self.requesterName = try requesterName.map(DisplayText.Field.requesterName.require)
        }
    }

    @Sendable func create(_ request: Request, context: EventCreatorContext) async throws -> JSONBody<EventTicket> {
        var body = try await request.decodeJSON(CreateRequest.self, context: context)
        let name = body.event ?? EventName.login
        guard EventName.isValid(name) else {
            throw APIError.badRequest("event must be 1 to 64 of A-Z, 0-9 and _")
        }
        let shown = try Shown(
            details: body.details, location: body.location, ip: body.ip, requesterName: body.requesterName)
        (body.details, body.location, body.ip) = (shown.details, shown.location, shown.ip)
        let requesterName = shown.requesterName
        let requested = try body.userVerification.map(UserVerificationPolicy.requested)
        if body.approvers != nil {
            guard context.creator.holdsSecret else {
                throw APIError.forbidden(.secretRequired, "approvers needs the app's secret key: only its backend asks")
            }
            guard name != EventName.enrollNewTrustedDevice else {
                throw APIError.badRequest("a pairing is approved by the user's own device, not by approvers")
            }
        }
        let pairing = try await checkPairing(name: name, body: body, request: request, creator: context.creator)
        switch context.creator {
        case .device(let caller):
            let device = caller.device
            if let user = body.clientUserID, user != device.clientUserID {
                throw APIError.forbidden(.wrongUser, "this device belongs to another user")
            }
            let requires = UserVerificationRule.requires(key: caller.apiKey.userVerification, requested: requested)
            // Under the app's quorum policy for the event name, a device's
            // own request waits for the approvers as any other does.
            let quorumPolicy = try await QuorumResolution.policy(
                for: name, key: caller.apiKey, in: environment.store)
            switch quorumPolicy == nil
                ? UserVerificationRule.ownRequest(requiresUserVerification: requires)
                : UserVerificationRule.OwnRequest.pending
            {
            case .approvedByItself:
                return try await approveOwnRequest(by: device, name: name, body: body, context: context)
            case .pending:
                // The device's key is not enough: a device must approve it
                // with its passkey. Shown as an own request is (its name,
                // its address, no location), counted as the backend's own
                // (a trusted device is no requester at an address), and
                // with no number to type: the device that asked is
                // trusted, and the passkey is the check.
                var own = body
                own.clientUserID = device.clientUserID
                own.location = nil
                own.numberMatching = false
                return try await createPending(
                    issuer: caller.apiKey, by: .backend, name: name, body: own, requesterName: device.name,
                    ip: context.clientAddress, pairing: nil, requested: requested, context: context)
            }
        case .backend(let key):
            // For a client the backend relays (a sign-in form, an SSH
            // client): the requester limits of that client's address, and a
            // user's fraud report, apply as to any requester there.
            var asker = PendingRequester.backend
            if body.limitAsRequester == true {
                guard let ip = body.ip else {
                    throw APIError.badRequest("limit_as_requester needs ip: the address of the client asking")
                }
                asker = .requester(address: ip)
            }
            return try await createPending(
                issuer: key, by: asker, name: name, body: body, requesterName: requesterName,
                ip: body.ip ?? context.clientAddress, pairing: pairing, requested: requested, context: context)
        case .requester(let key):
            // The console's sign-ins are asked for by its own page, which
            // says what they are; one asked here could pass for another.
            if let refusal = ConsoleApp.refusal(of: .requesterEvent(name: name), apiKeyID: key.id) {
                throw APIError.forbidden(.consoleApp, refusal)
            }
            switch RequesterPolicy.refusal(
                event: name, setsDetails: body.details != nil, setsIP: body.ip != nil,
                setsLocation: body.location != nil,
                setsNumberMatching: body.numberMatching != nil, setsLimitAsRequester: body.limitAsRequester != nil)
            {
            case .eventNeedsSecret:
                throw APIError.forbidden(
                    .secretRequired, "only LOGIN and pairing events may be created without the secret key")
            case .fieldsNeedSecret:
                throw APIError.forbidden(
                    .secretRequired,
                    "details, ip, location, number_matching and limit_as_requester need the secret key")
            case nil:
                break
            }
            return try await createPending(
                issuer: key, by: .requester(address: context.clientAddress), name: name, body: body,
                requesterName: requesterName, ip: context.clientAddress, pairing: pairing, requested: requested,
                context: context)
        }
    }

    /// A pairing's new device, and its proof of possession, spent once the
    /// pending event is stored.
    struct Pairing {
        let device: NewDevice
        let proof: DeviceProofClaims
    }

    /// For `ENROLL_NEW_TRUSTED_DEVICE`: the device to add, whose key must
    /// have signed the `New-Device-Proof` and must not be enrolled yet.
    /// Checked without a write.
    private func checkPairing(
        name: String, body: CreateRequest, request: Request, creator: EventCreatorContext.Creator
    ) async throws -> Pairing? {
        let byTrustedDevice = if case .device = creator { true } else { false }
        if let refusal = PairingRule.refusal(
            event: name, byTrustedDevice: byTrustedDevice, newDevice: body.newDevice != nil,
            numberMatching: body.numberMatching)
        {
            throw APIError.refused(refusal)
        }
        guard var newDevice = body.newDevice else { return nil }
        newDevice.name = try DisplayText.Field.deviceName.require(newDevice.name)
        newDevice.type = try DisplayText.Field.deviceType.require(newDevice.type)
        guard let proof = request.headers[.newDeviceProof] else {
            throw APIError.unauthorized("sign a New-Device-Proof with the new key to show you hold it")
        }
        let claims = try await ProofCheck(environment: environment).possession(
            proof, key: newDevice.publicKey, request: request, now: environment.now())
        guard try await environment.store.device(id: newDevice.publicKey.thumbprint) == nil else {
            throw APIError.conflict(.deviceExists, "this key is enrolled already")
        }
        return Pairing(device: newDevice, proof: claims)
    }

    /// Seed case 1: the request comes from a trusted device itself, and its
    /// event does not require user verification.
    @inline(never)
    private func approveOwnRequest(
        by device: TrustedDevice, name: String, body: CreateRequest, context: EventCreatorContext
    ) async throws -> JSONBody<EventTicket> {
        let now = environment.now()
        let event = ApprovalEvent.approvedByItself(
            device, name: name, ip: context.clientAddress, details: body.details, now: now)
        try await environment.store.insertEvent(event)
        EventTransitions(environment: environment).created(event)
        let document = try await environment.document(for: event, withToken: true)
        return JSONBody(EventTicket(event: document, requesterToken: nil, matchNumber: nil), status: .created)
    }

    /// Seed case 2: a machine that is not trusted asks (or a trusted one
    /// whose event requires user verification); a trusted device decides.
    @inline(never)
    private func createPending(
        issuer key: APIKey, by requester: PendingRequester, name: String, body: CreateRequest,
        requesterName: String?, ip: String, pairing: Pairing?, requested: UserVerificationPolicy?,
        context: EventCreatorContext
    ) async throws -> JSONBody<EventTicket> {
        guard let user = body.clientUserID, ClientUserID.isValid(user) else {
            throw APIError.badRequest("client_user_id is missing or invalid")
        }
        var quorum: ApproverQuorum?
        if let approvers = body.approvers {
            // The app's policy for the event name is the only say in it.
            guard try await QuorumResolution.policy(for: name, key: key, in: environment.store) == nil else {
                throw APIError.badRequest(
                    "this app's policy sets the approvers of \(name) (GET /api/v1/quorum-policies); leave approvers out"
                )
            }
            quorum = try await self.quorum(approvers, requester: user, issuer: key.id)
        }
        let opened = try await PendingEvents(environment: environment).open(
            PendingEvents.Draft(
                key: key, user: user, name: name, ip: ip, location: body.location, details: body.details,
                requesterName: requesterName, numberMatching: body.numberMatching != false,
                newDevice: pairing?.device, userVerification: requested, quorum: quorum),
            by: requester, holdsSecret: context.creator.holdsSecret)
        if let pairing {
            try await ProofCheck(environment: environment).spend(
                pairing.proof, of: pairing.device.publicKey, now: opened.event.createdAt)
        }
        let document = try await environment.document(for: opened.event, withToken: false)
        return JSONBody(
            EventTicket(
                event: document, requesterToken: opened.requesterToken, matchNumber: opened.event.matchNumber),
            status: .created)
    }

    /// The quorum `request` asks for an event of `requester` at app `issuer`.
    private func quorum(_ request: ApproversRequest, requester: String, issuer: String) async throws
        -> ApproverQuorum
    {
        guard let required = request.requiredApprovals else {
            throw APIError.badRequest("approvers needs required_approvals: how many of them must approve")
        }
        return try await QuorumResolution(environment: environment).quorum(
            users: request.users, group: request.group, requiredApprovals: required,
            allowRequester: request.allowRequester ?? false, requester: requester, issuer: issuer)
    }

    /// The event, held up to `?wait=N` seconds until it is settled.
    @Sendable func show(_ request: Request, context: EventHolderContext) async throws -> JSONBody<EventDocument> {
        let id = try context.parameters.require("id")
        let wait = try request.waitSeconds(max: environment.policy.maxWait)
        let holder = if case .backend = context.holder { "backend/" + id } else { "requester/" + id }
        let settled = try await LongPoll(environment: environment).event(id, wait: wait, holder: holder) {
            try await Self.event(id, heldBy: context.holder, in: environment)
        }
        return JSONBody(try await environment.document(for: settled, withToken: true))
    }
}

extension EventController {
    /// Withdraws a pending event, for its requester (by the requester
    /// token) or its app's backend: the person gave up, or the code they
    /// typed was refused. Its trusted devices no longer see it, a decision
    /// on it is refused, and it no longer counts against the pending
    /// limits. Withdrawing again answers the same; a decided or expired
    /// event is left as it is.
    @Sendable func withdraw(_ request: Request, context: EventHolderContext) async throws -> JSONBody<EventDocument> {
        let id = try context.parameters.require("id")
        let event = try await Self.event(id, heldBy: context.holder, in: environment)
        let now = environment.now()
        switch Withdrawal.evaluate(event, now: now) {
        case .alreadyWithdrawn:
            return JSONBody(try await environment.document(for: event, withToken: true))
        case .refused(let refusal):
            throw APIError.refused(refusal)
        case .withdraw:
            break
        }
        let withdrawn = try await EventTransitions(environment: environment).withdraw(event, now: now)
        context.logger.info("event withdrawn", metadata: ["event": "\(id)"])
        return JSONBody(try await environment.document(for: withdrawn, withToken: true))
    }

    /// The event, if `holder` is its requester (by the requester token) or
    /// its app's backend; for anyone else, the same 404 as for an unknown
    /// id, so a guessed id tells nothing.
    static func event(_ id: String, heldBy holder: EventHolderContext.Holder, in environment: BrokerEnvironment)
        async throws -> ApprovalEvent
    {
        guard let event = try await environment.store.event(id: id) else {
            throw APIError.notFound("no such event")
        }
        switch holder {
        case .backend(let key) where key.id == event.issuer:
            return event
        case .requester(let secret):
            guard let digest = event.requesterTokenDigest,
                SecretToken.constantTimeEquals(digest, SecretToken.digest(secret))
            else { throw APIError.notFound("no such event") }
            return event
        case .backend, .nobody:
            throw APIError.notFound("no such event")
        }
    }
}
