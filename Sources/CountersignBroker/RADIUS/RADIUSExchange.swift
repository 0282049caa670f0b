import CountersignCore
import CountersignStore
import Foundation
import Logging

/// How the listener answered a RADIUS request, as metrics count it.
enum RADIUSOutcome: String, CaseIterable, Sendable {
    case accept, reject, challenge
    /// Not answered: from an address no client covers, not authentic, not
    /// an Access-Request, or the store unavailable (the NAS tries again).
    case dropped
    /// A retransmission, answered from the cache or left to the answer on its way.
    case retransmitted
    /// An Accounting-Request, acknowledged and otherwise ignored.
    case accounting
}

/// One Access-Request of a registered client, authenticated, turned into
/// its answer: the login's event opened, a TOTP code tried, or the event's
/// decision awaited (``RADIUSLogin`` decides what each state is answered).
struct RADIUSExchange {
    let environment: BrokerEnvironment
    /// How long a request is held for the device's decision.
    let hold: TimeInterval
    let logger: Logger

    /// The answer's code and attributes; nil drops the request.
    struct Answer {
        let code: RADIUSPacket.Code
        var attributes: [RADIUSAttribute]

        static func reject(_ message: String) -> Answer {
            Answer(code: .accessReject, attributes: [RADIUSAttribute(.replyMessage, text: message)])
        }
        static func accept(_ message: String) -> Answer {
            Answer(code: .accessAccept, attributes: [RADIUSAttribute(.replyMessage, text: message)])
        }
    }

    /// Answers an authentic Access-Request from `client`, whose packet
    /// came from `source`.
    func answer(_ request: RADIUSPacket, password: [UInt8]?, from client: RADIUSClient, source: String) async
        -> Answer?
    {
        do {
            return try await answering(request, password: password, from: client, source: source)
        } catch let error as APIError {
            return .reject(error.message)
        } catch let error as StoreError {
            switch error.code {
            case .backend:
                // The NAS asks again, or asks its next server.
                logger.notice("RADIUS request dropped: the store failed", metadata: ["error": "\(error.message)"])
                return nil
            case .limitReached, .userProtected: return .reject(error.message)
            default:
                logger.error("RADIUS request failed", metadata: ["error": "\(error)"])
                return .reject("The server could not take the request")
            }
        } catch {
            logger.error("RADIUS request failed", metadata: ["error": "\(String(reflecting: error))"])
            return .reject("The server could not take the request")
        }
    }

    private func answering(_ request: RADIUSPacket, password: [UInt8]?, from client: RADIUSClient, source: String)
        async throws -> Answer?
    {
        guard let user = request.text(.userName), ClientUserID.isValid(user) else {
            return .reject("A user name is required")
        }
        guard request.first(.chapPassword) == nil, request.first(.eapMessage) == nil else {
            return .reject("Only PAP is supported: set the client to send User-Password")
        }
        guard let key = try await environment.store.apiKey(id: client.apiKeyID) else {
            logger.error("RADIUS client's API key is revoked", metadata: ["client": "\(client.name)"])
            return .reject("The server is not set up for this client")
        }
        let typed = password.map { String(decoding: $0, as: UTF8.self) } ?? ""
        if let stateBytes = request.first(.state) {
            guard let state = RADIUSState(stateBytes) else { return .reject("Unknown request; start again") }
            return try await resume(state, user: user, client: client, typed: typed)
        }
        // With an upstream, the password is its to check, first; without
        // one, six digits are a TOTP code (on a broker that takes codes)
        // and anything else is ignored.
        if let upstream = client.upstream {
            switch await RADIUSUpstream(upstream: upstream, logger: logger).check(request, password: password ?? []) {
            case .accepted: break
            case .rejected(let message): return .reject(message ?? "Wrong user name or password")
            case .unreachable: return nil
            }
        }
        let code = client.upstream == nil && environment.vault != nil && RADIUSLogin.isCode(typed)
        let address = Self.userAddress(of: request, source: source)
        let opened = try await PendingEvents(environment: environment).open(
            PendingEvents.Draft(
                key: key, user: user, name: EventName.login, ip: address,
                requesterName: client.name, numberMatching: client.mode == .challenge && !code,
                limits: environment.policy.pendingLimits.forSignInPage, channel: .radius),
            by: .requester(address: address), holdsSecret: false)
        if code {
            return try await tryCode(typed, on: opened.event, user: user, withdrawingOnRefusal: true)
        }
        switch client.mode {
        case .challenge:
            return challenge(
                opened.event, state: RADIUSState(eventID: opened.event.id, requesterToken: opened.requesterToken))
        case .push:
            return try await awaitDecision(on: opened.event, withdrawingOnTimeout: true)
        }
    }

    /// The next request of a challenge: a TOTP code typed, or the
    /// device's decision awaited.
    private func resume(_ state: RADIUSState, user: String, client: RADIUSClient, typed: String) async throws
        -> Answer
    {
        guard let event = try await environment.store.event(id: state.eventID),
            RADIUSLogin.belongs(event, to: client, user: user), let digest = event.requesterTokenDigest,
            SecretToken.constantTimeEquals(SecretToken.digest(state.requesterToken), digest)
        else { return .reject("Unknown request; start again") }
        if environment.vault != nil, RADIUSLogin.isCode(typed), !event.isSettled(at: environment.now()) {
            // A wrong code here leaves the login open: the device may still
            // approve it, and whoever guesses cannot end it.
            let answer = try await tryCode(typed, on: event, user: user, withdrawingOnRefusal: false)
            guard answer.code == .accessReject,
                let current = try await environment.store.event(id: event.id),
                !current.isSettled(at: environment.now())
            else { return answer }
            var again = challenge(current, state: state, again: true)
            let refusal = answer.attributes.first.map { String(decoding: $0.value, as: UTF8.self) } ?? ""
            again.attributes[0] = RADIUSAttribute(
                .replyMessage, text: refusal + ". " + RADIUSLogin.prompt(for: current))
            return again
        }
        let answer = try await awaitDecision(on: event, withdrawingOnTimeout: false)
        guard answer.code == .accessChallenge else { return answer }
        return challenge(event, state: state, again: true)
    }

    private func challenge(_ event: ApprovalEvent, state: RADIUSState, again: Bool = false) -> Answer {
        Answer(
            code: .accessChallenge,
            attributes: [
                RADIUSAttribute(.replyMessage, text: RADIUSLogin.prompt(for: event, again: again)),
                RADIUSAttribute(.state, state.bytes),
                // How long the NAS should wait for the person's response (RFC 2865 §5.27).
                RADIUSAttribute(
                    .sessionTimeout, integer: UInt32(RADIUSLogin.secondsLeft(of: event, at: environment.now()))),
            ])
    }

    /// Holds the request until the event is decided or the hold ends:
    /// Accept or Reject once decided; still pending, a challenge, or in
    /// push mode the event withdrawn and a Reject (nobody waits on it).
    private func awaitDecision(on event: ApprovalEvent, withdrawingOnTimeout: Bool) async throws -> Answer {
        var latest = try await LongPoll(environment: environment).event(
            event.id, wait: hold, holder: "radius:" + event.id,
            read: { try await environment.store.event(id: event.id) ?? event })
        var now = environment.now()
        if withdrawingOnTimeout, !latest.isSettled(at: now) {
            do {
                _ = try await EventTransitions(environment: environment).withdraw(latest, now: now)
                return .reject("No answer in time; try again")
            } catch is APIError {
                // Decided meanwhile: that decision stands.
                latest = try await environment.store.event(id: event.id) ?? latest
                now = environment.now()
            }
        }
        switch RADIUSLogin.verdict(for: latest, at: now) {
        case .accept(let message): return .accept(message)
        case .reject(let message): return .reject(message)
        case .waiting(let message, _):
            return Answer(code: .accessChallenge, attributes: [RADIUSAttribute(.replyMessage, text: message)])
        }
    }

    /// A TOTP code typed as the password or the challenge's response: the
    /// event approved by it, or refused and, typed as the password (the
    /// login opened for the code alone), withdrawn.
    private func tryCode(_ code: String, on event: ApprovalEvent, user: String, withdrawingOnRefusal: Bool)
        async throws -> Answer
    {
        do {
            let match = try await CodeCheck(environment: environment, logger: logger).verify(
                code, issuer: event.issuer, user: user, event: event)
            guard let settled = match.settled,
                case .accept(let message) = RADIUSLogin.verdict(
                    for: settled, at: environment.now())
            else { return .reject("Refused") }
            return .accept(message)
        } catch let refusal as APIError {
            let now = environment.now()
            if withdrawingOnRefusal, let current = try await environment.store.event(id: event.id),
                !current.isSettled(at: now)
            {
                _ = try? await EventTransitions(environment: environment).withdraw(current, now: now)
            }
            return .reject(refusal.code == .wrongCode ? "That code is wrong" : refusal.message)
        }
    }

    /// The person's address as the approver sees it: the Calling-Station-Id
    /// when it is an IP address (a VPN's client), else the NAS's own
    /// address as it says, else the packet's source.
    static func userAddress(of request: RADIUSPacket, source: String) -> String {
        if let calling = request.text(.callingStationID), IPNetwork.parse(calling) != nil { return calling }
        if let nas = request.first(.nasIPAddress), nas.count == 4 { return nas.map(String.init).joined(separator: ".") }
        return source
    }
}
