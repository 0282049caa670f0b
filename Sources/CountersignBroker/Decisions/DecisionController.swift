import CountersignCore
import CountersignStore
import Foundation
import Hummingbird

/// Trusted devices' answers to pending events.
///
/// A decision authenticates itself: it is a JWS by the device's key, bound
/// to the event id and its server nonce. The first valid decision settles
/// the event with one conditional write; everything else changes nothing.
struct DecisionController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<DecisionContext> {
        RouteCollection(context: DecisionContext.self)
            .post("events/:id/decision", use: decide)
    }

    @Sendable func decide(_ request: Request, context: DecisionContext) async throws -> JSONBody<EventDocument> {
        let settled = try await settle(try context.parameters.require("id"), context)
        return JSONBody(try await environment.document(for: settled, withToken: false).forApprovers())
    }

    /// The decision checked against the event and applied: the event after it.
    ///
    /// Out of line, as ``apply(_:jws:assertion:spending:by:on:ip:now:)``:
    /// a connection's task keeps its async frames at the deepest they ever
    /// reached, and an approver's connection goes back to holding inbox
    /// polls (docs/benchmarks.md, "Smaller frames for creating and deciding").
    @inline(never)
    private func settle(_ id: String, _ context: DecisionContext) async throws -> ApprovalEvent {
        let now = environment.now()
        let device = context.decider.device
        // What the approver was shown names the app as its API key is named now.
        guard let (event, appName) = try await environment.store.eventWithAppName(id: id) else {
            throw APIError.notFound("no such event")
        }
        let app = appName ?? ""
        let claims = try await verify(context.decider.decision, by: device, on: event, app: app, now: now)
        // The counter is compared only for a pending event: a decision sent
        // again once its event settled is told it was (`replayed_decision`,
        // `already_decided`), not that its passkey may have been copied.
        let counting = event.status(at: now) == .pending
        let assertion = try context.decider.assertion.map {
            ($0, try verify($0, of: context.decider.text, by: device, counting: counting))
        }
        // Its id is spent in the write it makes, or on its own before a refusal.
        let spent = SpentProofID(
            jti: "decision:" + claims.jti, deviceID: device.id,
            expiresAt: max(event.expiresAt, now + environment.policy.proofLeeway * 2))
        let settled: ApprovalEvent
        do {
            settled = try await apply(
                claims, jws: context.decider.text, assertion: assertion,
                spending: spent, by: device, on: event, ip: context.clientAddress, now: now)
        } catch let error as StoreError where error.code == .replayed {
            throw APIError.conflict(.replayedDecision, "this decision was submitted before")
        } catch let error as StoreError where error.code == .conflict && error.event == nil {
            throw APIError.conflict(.signCount, "the passkey was used again meanwhile; answer the request again")
        }
        return settled
    }

    /// The decision's claims, its signature and binding to `event` checked
    /// (proto/signing.md). Out of line, as ``settle(_:_:)``: its frames
    /// exist only while it runs.
    @inline(never)
    private func verify(
        _ decision: CompactJWS.Parsed, by device: TrustedDevice, on event: ApprovalEvent, app: String, now: Date
    ) async throws -> DecisionClaims {
        do {
            return try await DecisionProof.verify(
                decision, key: device.publicKey, eventID: event.id, nonce: event.nonce,
                shown: ShownRequest(event, app: app).digest, newDevice: event.newDevice?.publicKey.thumbprint,
                acceptedOrigins: environment.origins, now: now, leeway: environment.policy.proofLeeway)
        } catch {
            throw APIError.invalid(.invalidDecision, error)
        }
    }

    /// Checks the passkey assertion sent with a decision (proto/signing.md
    /// §10): of the device's passkey, for the decision's own challenge, the
    /// owner verified, the counter gone up if `counting`. Returns the
    /// counter to keep.
    private func verify(
        _ assertion: PasskeyAssertion, of decision: String, by device: TrustedDevice, counting: Bool
    ) throws -> UInt32 {
        guard let passkey = device.passkey else {
            throw APIError(.badRequest, .invalidDecision, "wrong_key: this device has no passkey")
        }
        do {
            return try assertion.verify(
                of: passkey.credentialID, publicKey: passkey.publicKey,
                challenge: PasskeyAssertion.challenge(for: decision), relyingParty: try environment.relyingParty(),
                storedSignCount: counting ? passkey.signCount : nil
            ).signCount
        } catch let error as ProtocolError {
            throw APIError.invalid(.invalidDecision, error)
        }
    }

    @inline(never)
    private func apply(
        _ claims: DecisionClaims, jws: String, assertion: (PasskeyAssertion, UInt32)?, spending spent: SpentProofID,
        by device: TrustedDevice, on event: ApprovalEvent, ip: String, now: Date
    ) async throws -> ApprovalEvent {
        let transitions = EventTransitions(environment: environment)
        if event.quorum != nil {
            return try await answerQuorum(
                event, claims: claims, jws: jws, assertion: assertion, spending: spent, by: device, ip: ip, now: now)
        }
        switch DecisionRules.evaluate(claims, by: device, on: event, userVerified: assertion != nil, now: now) {
        case .settle(let status):
            // A pairing approval adds the event's key, in the same write.
            let enrolls = event.newDevice.map {
                TrustedDevice(
                    publicKey: $0.publicKey, issuer: event.issuer, clientUserID: event.clientUserID, name: $0.name,
                    type: $0.type, createdAt: now)
            }
            do {
                return try await transitions.settle(
                    event,
                    with: RecordedDecision(
                        status: status, deviceID: device.id, jws: jws, enrolls: enrolls, ip: ip, spends: spent,
                        assertion: assertion?.0, signCount: assertion?.1),
                    now: now)
            } catch let error as StoreError where error.code == .alreadyExists {
                throw APIError.conflict(.deviceExists, "the key this pairing would add is enrolled already")
            }
        case .reportFraud:
            return try await transitions.reportFraud(
                event,
                with: RecordedDecision(
                    status: .rejected, deviceID: device.id, jws: jws, ip: ip, spends: spent, assertion: assertion?.0,
                    signCount: assertion?.1),
                now: now)
        case .wrongMatch:
            let after = try await transitions.countWrongMatch(event, spending: spent, now: now)
            throw wrongMatch(after)
        case .refused(let refusal):
            // Spent all the same, so that a replay is named as one.
            try await environment.store.consumeProofID(
                spent.jti, deviceID: spent.deviceID, expiresAt: spent.expiresAt, now: now)
            throw APIError.refused(refusal)
        case .countApproval:
            // Only an event with a quorum counts approvals, answered above.
            throw APIError.refused(.alreadyDecided)
        }
    }

    /// An answer to an event that needs a quorum: judged in the write, so
    /// that approvals arriving together (on any instance) are each counted
    /// once against the ones before them.
    @inline(never)
    private func answerQuorum(
        _ event: ApprovalEvent, claims: DecisionClaims, jws: String, assertion: (PasskeyAssertion, UInt32)?,
        spending spent: SpentProofID, by device: TrustedDevice, ip: String, now: Date
    ) async throws -> ApprovalEvent {
        let decision = RecordedDecision(
            status: .pending, deviceID: device.id, jws: jws, ip: ip, spends: spent, assertion: assertion?.0,
            signCount: assertion?.1)
        let (after, outcome) = try await EventTransitions(environment: environment).answerQuorum(
            event, with: decision, claims: claims, now: now)
        switch outcome {
        case .countApproval, .settle: return after
        case .wrongMatch: throw wrongMatch(after)
        case .refused(let refusal): throw APIError.refused(refusal)
        case .reportFraud: throw APIError.refused(.alreadyDecided)
        }
    }

    /// What a wrong number is answered with, given the event after it.
    private func wrongMatch(_ after: ApprovalEvent) -> APIError {
        let left = environment.policy.wrongMatchesLeft(after: after)
        guard left > 0 else {
            return APIError(
                .unprocessableContent, .tooManyWrongMatches,
                "that is not the number the requesting machine shows; the request is now rejected")
        }
        return APIError(
            .unprocessableContent, .wrongMatch,
            "that is not the number the requesting machine shows; \(APIError.triesLeft(left))")
    }
}
