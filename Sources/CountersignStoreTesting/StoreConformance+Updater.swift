import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    /// A change `change` throws: it must reach the caller as thrown.
    struct RefusedChange: Error, Equatable {}

    /// The update-in-transaction entry itself, whatever rule runs in it.
    static let updaterCases: [Case] = [
        Case(name: "updater: the columns a rule changes are written whole, with what every change writes") { store in
            let event = Fixture.event()
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
            let written = try await store.updateEvent(id: event.id, spending: nil, now: Fixture.t0 + 5) { current in
                var after = current
                after.storedStatus = .rejected
                after.storedReason = .tooManyWrongMatches
                after.decidedAt = Fixture.t0 + 5
                after.wrongMatches = 7
                after.method = .totp
                after.decidedBy = "dev_rule"
                after.codeAttempts = 4
                after.expiresAt = Fixture.t0 + 30
                after.updatedAt = Fixture.t0 + 5
                return after
            }
            try check(try await store.event(id: event.id) == written, "as returned")
            try check(
                written.storedStatus == .rejected && written.storedReason == .tooManyWrongMatches
                    && written.decidedAt == Fixture.t0 + 5 && written.wrongMatches == 7
                    && written.expiresAt == Fixture.t0 + 30 && written.method == .totp
                    && written.decidedBy == "dev_rule"
                    && written.codeAttempts == 4, "every column the rule set")
            let records = try await store.decisionRecords(
                issuer: event.issuer, clientUserID: event.clientUserID, limit: 10)
            try check(records.map(\.eventID) == [event.id], "its decision record, in the same transaction")

            let other = Fixture.event()
            try await store.insertPendingEvent(other, maxPending: 3, now: Fixture.t0)
            let withdrawn = try await store.updateEvent(id: other.id, spending: nil, now: Fixture.t0 + 6) {
                $0.withdrawn(at: Fixture.t0 + 6)
            }
            try check(try await store.event(id: other.id) == withdrawn, "withdrawn as returned")
            try check(withdrawn.withdrawnAt == Fixture.t0 + 6 && withdrawn.expiresAt == Fixture.t0 + 6, "both times")
        },
        Case(name: "updater: what the change throws rolls everything back, the spent id too, and reaches the caller") {
            store in
            let device = try await Fixture.enrolled(in: store)
            let event = Fixture.event()
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
            let spent = SpentProofID(jti: "decision:u1", deviceID: device.id, expiresAt: Fixture.t0 + 600)
            do {
                _ = try await store.updateEvent(id: event.id, spending: spent, now: Fixture.t0 + 1) { _ in
                    throw RefusedChange()
                }
                throw ConformanceFailure(message: "the refusal was swallowed", location: #fileID)
            } catch is RefusedChange {}
            try check(try await store.event(id: event.id) == event, "the event as it was")
            let counted = try await store.updateEvent(id: event.id, spending: spent, now: Fixture.t0 + 2) {
                $0.countingWrongMatch(maxWrong: 3, at: Fixture.t0 + 2)
            }
            try check(counted.wrongMatches == 1, "the id was not spent by the change that threw")
            try await checkThrows(.replayed, "spent by the one that was written") {
                try await store.updateEvent(id: event.id, spending: spent, now: Fixture.t0 + 3) { _ in
                    throw RefusedChange()
                }
            }
            try await checkThrows(.notFound, "an unknown event") {
                try await store.updateEvent(id: "ev_unknown", spending: nil, now: Fixture.t0) { $0 }
            }
        },
        Case(name: "updater: a sign-in's change is written whole with its token, or not at all") { store in
            _ = try await Fixture.enrolled(in: store)
            let event = Fixture.event()
            let signIn = OpenIDSignIn(
                eventID: event.id, apiKeyID: "ck_app", redirectURI: "https://app.example/cb",
                codeChallenge: String(repeating: "a", count: 43), state: nil, nonce: nil, scope: "openid",
                createdAt: Fixture.t0, codeDigest: Data([1]), codeExpiresAt: Fixture.t0 + 120)
            try await store.insertPendingEvent(
                event, by: .backend, limits: PendingLimits(), announcing: [], attached: .signIn(signIn),
                now: Fixture.t0)
            let token = RefreshTokenRecord(
                digest: Data([7]), familyID: signIn.family, apiKeyID: "ck_app", identityID: "",
                createdAt: Fixture.t0, expiresAt: Fixture.t0 + 3600, clientUserID: "alice")
            do {
                _ = try await store.updateOpenIDSignIn(eventID: event.id) { current -> (OpenIDSignInChange, Void) in
                    _ = OpenIDSignInChange(current.ending(at: Fixture.t0 + 1)!, storing: token)
                    throw RefusedChange()
                }
                throw ConformanceFailure(message: "the refusal was swallowed", location: #fileID)
            } catch is RefusedChange {}
            try check(try await store.openIDSignIn(eventID: event.id) == signIn, "the sign-in as it was")
            // A change whose own write fails (its token's digest is taken)
            // leaves the sign-in's row as it was too.
            var taken = token
            taken.familyID = "oidc:ev_elsewhere"
            try await store.insertRefreshToken(taken)
            try await checkThrows(.alreadyExists, "a token whose digest is taken") {
                try await store.updateOpenIDSignIn(eventID: event.id) { current in
                    var spent = current
                    spent.redeemedAt = Fixture.t0 + 1
                    return (OpenIDSignInChange(spent, storing: token), ())
                }
            }
            try check(try await store.openIDSignIn(eventID: event.id) == signIn, "not spent without its token")
            let fresh = RefreshTokenRecord(
                digest: Data([8]), familyID: signIn.family, apiKeyID: "ck_app", identityID: "",
                createdAt: Fixture.t0, expiresAt: Fixture.t0 + 3600, clientUserID: "alice")
            let (written, said) = try await store.updateOpenIDSignIn(eventID: event.id) { current in
                var spent = current
                spent.redeemedAt = Fixture.t0 + 2
                spent.confidential = true
                return (OpenIDSignInChange(spent, storing: fresh), "spent")
            }
            try check(said == "spent" && written.redeemedAt == Fixture.t0 + 2 && written.confidential, "as returned")
            try check(try await store.openIDSignIn(eventID: event.id) == written, "as stored")
            try check(try await store.refreshToken(digest: Data([8]))?.revokedAt == nil, "its token, stored with it")
            _ = try await store.updateOpenIDSignIn(eventID: event.id) {
                (OpenIDSignInChange($0.ending(at: Fixture.t0 + 3)!), ())
            }
            try check(try await store.refreshToken(digest: Data([8]))?.revokedAt != nil, "ending revokes its family")
            try check(try await store.refreshToken(digest: Data([7]))?.revokedAt == nil, "and no other family")
            try await checkThrows(.notFound, "an unknown sign-in") {
                try await store.updateOpenIDSignIn(eventID: "ev_unknown") { (OpenIDSignInChange($0), ()) }
            }
        },
        Case(name: "updater: concurrent changes of one event are serialised, none lost") { store in
            let event = Fixture.event()
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<12 {
                    group.addTask {
                        _ = try await store.updateEvent(id: event.id, spending: nil, now: Fixture.t0 + 1) {
                            $0.countingWrongMatch(maxWrong: 100, at: Fixture.t0 + 1)
                        }
                    }
                }
                try await group.waitForAll()
            }
            try check(try await store.event(id: event.id)?.wrongMatches == 12, "each change saw the one before it")
        },
        Case(name: "updater: concurrent changes of one user's codes are serialised, none lost") { store in
            let event = Fixture.event(user: "nina")
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
            let limits = CodeLimits(perEvent: 100, lockoutAfter: 100)
            // The first failure has no row to lock: the user's lock orders them.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<12 {
                    group.addTask {
                        _ = try await store.reserveCodeAttempt(
                            issuer: "ck_app", clientUserID: "nina", eventID: index.isMultiple(of: 2) ? event.id : nil,
                            limits: limits, now: Fixture.t0 + 1)
                    }
                }
                try await group.waitForAll()
            }
            try check(try await store.event(id: event.id)?.codeAttempts == 6, "each attempt on the event counted")
            let next = try await store.reserveCodeAttempt(
                issuer: "ck_app", clientUserID: "nina", eventID: nil, limits: limits, now: Fixture.t0 + 2)
            try check(next.consecutiveFailures == 13, "each failure counted: \(next)")
        },
        Case(name: "updater: a codes change that throws leaves the failures, the event and the step as they were") {
            store in
            let device = try await Fixture.enrolled(in: store, user: "otto")
            try await store.setTOTPSecret(Data([1]), deviceID: device.id)
            let event = Fixture.event(user: "otto")
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
            _ = try await store.reserveCodeAttempt(
                issuer: "ck_app", clientUserID: "otto", eventID: event.id, limits: CodeLimits(), now: Fixture.t0 + 1)
            let read = try await store.updateCodes(
                issuer: "ck_app", clientUserID: "otto", eventID: event.id, deviceID: device.id, now: Fixture.t0 + 2
            ) { state in (CodeChange(failures: state.failures), state) }
            try check(
                read.failures.consecutive == 1 && read.failures.lastAttemptAt == Fixture.t0 + 1
                    && read.event?.codeAttempts == 1 && read.device?.id == device.id, "the state as stored: \(read)")
            do {
                _ = try await store.updateCodes(
                    issuer: "ck_app", clientUserID: "otto", eventID: event.id, deviceID: device.id,
                    now: Fixture.t0 + 3
                ) { state -> (CodeChange, Void) in
                    _ = CodeChange(
                        failures: .none, event: state.event?.approved(byCodeOf: device.id, at: Fixture.t0 + 3),
                        acceptedStep: 9)
                    throw RefusedChange()
                }
                throw ConformanceFailure(message: "the refusal was swallowed", location: #fileID)
            } catch is RefusedChange {}
            let after = try await store.updateCodes(
                issuer: "ck_app", clientUserID: "otto", eventID: event.id, deviceID: device.id, now: Fixture.t0 + 4
            ) { state in (CodeChange(failures: state.failures), state) }
            try check(after == read, "nothing changed: \(after)")
            let unknown = try await store.updateCodes(
                issuer: "ck_app", clientUserID: "nobody", eventID: "ev_unknown", deviceID: "dev_unknown",
                now: Fixture.t0
            ) { state in (CodeChange(failures: state.failures), state) }
            try check(
                unknown == CodeState(failures: .none, event: nil, device: nil), "nothing there reads as nothing")
        },
        Case(name: "updater: a fraud report whose change throws leaves the reported event pending, its id unspent") {
            store in
            let device = try await Fixture.enrolled(in: store, user: "pia")
            let reported = Fixture.event(user: "pia")
            let other = Fixture.event(user: "pia")
            for event in [reported, other] { try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0) }
            let spent = SpentProofID(jti: "decision:fraud-u", deviceID: device.id, expiresAt: Fixture.t0 + 600)
            let decision = RecordedDecision(status: .rejected, deviceID: device.id, jws: "jws", spends: spent)
            do {
                _ = try await store.reportFraud(id: reported.id, decision: decision, now: Fixture.t0 + 1) {
                    reported, pending, running in
                    try check(
                        reported.statusReason == .fraudReported && pending.map(\.id) == [other.id] && running == nil,
                        "the change reads the reported event settled, the others pending: \(pending.map(\.id))")
                    throw RefusedChange()
                }
                throw ConformanceFailure(message: "the refusal was swallowed", location: #fileID)
            } catch is RefusedChange {}
            for event in [reported, other] {
                try check(try await store.event(id: event.id) == event, "\(event.id) as it was")
            }
            let report = try await store.reportFraud(
                id: reported.id, decision: decision, protectUntil: Fixture.t0 + 900, now: Fixture.t0 + 2)
            try check(report.alsoRejected.map(\.id) == [other.id], "the id was not spent by the change that threw")
        },
        Case(name: "updater: a CIBA request's change is written whole, or not at all when it throws") { store in
            let event = Fixture.event(match: nil)
            let request = CIBARequest(
                eventID: event.id, apiKeyID: "ck_app", scope: "openid", interval: 2, nextPollAt: Fixture.t0,
                createdAt: Fixture.t0)
            try await store.insertPendingEvent(
                event, by: .backend, limits: PendingLimits(perUser: 3), announcing: [], ciba: request, now: Fixture.t0)
            do {
                _ = try await store.updateCIBARequest(eventID: event.id) { current, _ -> (CIBARequest?, Void) in
                    _ = current
                    throw RefusedChange()
                }
                throw ConformanceFailure(message: "the refusal was swallowed", location: #fileID)
            } catch is RefusedChange {}
            try check(try await store.cibaRequest(eventID: event.id) == request, "as it was")
            var next = request
            next.interval = 9
            next.nextPollAt = Fixture.t0 + 9
            next.redeemedAt = Fixture.t0 + 4
            let written = next
            let seen = try await store.updateCIBARequest(eventID: event.id) { _, read in (written, read.id) }
            try check(seen == event.id, "the change read the request's event")
            try check(try await store.cibaRequest(eventID: event.id) == written, "every column the rule set")
            try await checkThrows(.notFound, "no request") {
                try await store.updateCIBARequest(eventID: "ev_unknown") { request, _ in (request as CIBARequest?, ()) }
            }
        },
    ]
}
