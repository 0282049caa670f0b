import CountersignCore
import CountersignStore
import Foundation

extension StoreConformance {
    static let codeCases: [Case] = [
        Case(
            name: "codes: a user's count of failures is collected a day after the last attempt, never during a lock-out"
        ) {
            store in
            let locking = CodeLimits(lockoutAfter: 2, firstLockout: 3 * 86400, maxLockout: 3 * 86400)
            let attempt: @Sendable (String, Date, CodeLimits) async throws -> Int = { user, at, limits in
                try await store.reserveCodeAttempt(
                    issuer: "ck_app", clientUserID: user, eventID: nil, limits: limits, now: at
                ).consecutiveFailures
            }
            try check(try await attempt("hana", Fixture.t0, CodeLimits()) == 1, "a first failure")
            _ = try await store.garbageCollect(now: Fixture.t0 + 86000, eventsEndedBefore: Fixture.t0)
            try check(try await attempt("hana", Fixture.t0 + 86000, CodeLimits()) == 2, "kept within the day")
            _ = try await store.garbageCollect(now: Fixture.t0 + 86000 + 86401, eventsEndedBefore: Fixture.t0)
            try check(try await attempt("hana", Fixture.t0 + 86000 + 86401, CodeLimits()) == 1, "forgotten after it")
            // Locked out for 3 days: kept while the lock-out runs, even past a day.
            _ = try await attempt("ivan", Fixture.t0, locking)
            _ = try await attempt("ivan", Fixture.t0, locking)
            _ = try await store.garbageCollect(now: Fixture.t0 + 2 * 86400, eventsEndedBefore: Fixture.t0)
            try await checkThrows(.limitReached(retryAfter: 86400), "still locked") {
                _ = try await attempt("ivan", Fixture.t0 + 2 * 86400, locking)
            }
        },
        Case(name: "TOTP: a secret is stored once, and never for a revoked device") { store in
            let device = try await Fixture.enrolled(in: store, user: "gina")
            try await store.setTOTPSecret(Data([1, 2, 3]), deviceID: device.id)
            try check(try await store.device(id: device.id)?.sealedTOTPSecret == Data([1, 2, 3]), "reads back")
            try await checkThrows(.conflict, "a second secret") {
                try await store.setTOTPSecret(Data([4]), deviceID: device.id)
            }
            try check(try await store.device(id: device.id)?.sealedTOTPSecret == Data([1, 2, 3]), "the first stays")
            let revoked = try await Fixture.enrolled(in: store, user: "gina")
            _ = try await store.revokeDevice(
                id: revoked.id, issuer: "ck_app", clientUserID: "gina", author: Fixture.author, now: Fixture.t0)
            try await checkThrows(.conflict, "a revoked device") {
                try await store.setTOTPSecret(Data([5]), deviceID: revoked.id)
            }
            try await checkThrows(.notFound, "an unknown device") {
                try await store.setTOTPSecret(Data([6]), deviceID: "nope")
            }
        },
        Case(name: "TOTP: each step is accepted once per device, and an accepted code settles its event") { store in
            let device = try await Fixture.enrolled(in: store, user: "hank")
            try await store.setTOTPSecret(Data([1]), deviceID: device.id)
            let event = Fixture.event(user: "hank")
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
            let settled = try await store.acceptTOTPCode(
                deviceID: device.id, step: 100, eventID: event.id, now: Fixture.t0 + 1)
            try check(
                settled?.storedStatus == .approved && settled?.method == .totp && settled?.decidedBy == device.id
                    && settled?.decidedAt == Fixture.t0 + 1, "approved by TOTP, by the device whose code matched")
            try check(try await store.device(id: device.id)?.lastTOTPStep == 100, "the step is remembered")
            for step: Int64 in [100, 99] {
                try await checkThrows(.conflict, "step \(step) again") {
                    try await store.acceptTOTPCode(deviceID: device.id, step: step, eventID: nil, now: Fixture.t0 + 2)
                }
            }
            try await store.acceptTOTPCode(deviceID: device.id, step: 101, eventID: nil, now: Fixture.t0 + 3)

            let stale = Fixture.event(user: "hank")
            try await store.insertPendingEvent(stale, maxPending: 3, now: Fixture.t0)
            let tooLate = Fixture.t0 + 60 + CodeLimits.lateCodeWindow
            try await checkThrows(.conflict, "an event expired longer ago than the late-code window") {
                try await store.acceptTOTPCode(deviceID: device.id, step: 102, eventID: stale.id, now: tooLate)
            }
            try check(
                try await store.device(id: device.id)?.lastTOTPStep == 101, "a refused settlement burns no step")
            let other = Fixture.event(user: "ivy")
            try await store.insertPendingEvent(other, maxPending: 3, now: Fixture.t0)
            try await checkThrows(.conflict, "another user's event") {
                try await store.acceptTOTPCode(deviceID: device.id, step: 102, eventID: other.id, now: Fixture.t0 + 4)
            }
            try check(try await store.event(id: other.id)?.storedStatus == .pending, "which stays pending")

            let bare = try await Fixture.enrolled(in: store, user: "hank")
            try await checkThrows(.conflict, "a device without a secret") {
                try await store.acceptTOTPCode(deviceID: bare.id, step: 200, eventID: nil, now: Fixture.t0)
            }
            _ = try await store.revokeDevice(
                id: device.id, issuer: "ck_app", clientUserID: "hank", author: Fixture.author, now: Fixture.t0 + 5)
            try await checkThrows(.conflict, "a revoked device") {
                try await store.acceptTOTPCode(deviceID: device.id, step: 300, eventID: nil, now: Fixture.t0 + 6)
            }
        },
        Case(name: "TOTP: a code typed after the window ran out unanswered records the event approved by TOTP") {
            store in
            let limits = CodeLimits()
            let device = try await Fixture.enrolled(in: store, user: "hugo")
            try await store.setTOTPSecret(Data([1]), deviceID: device.id)
            let late = Fixture.event(user: "hugo")
            try await store.insertPendingEvent(late, maxPending: 3, now: Fixture.t0)
            let after = Fixture.t0 + 61
            let counted = try await store.reserveCodeAttempt(
                issuer: "ck_app", clientUserID: "hugo", eventID: late.id, limits: limits, now: after)
            try check(counted.eventAttemptsLeft == limits.perEvent - 1, "the attempt counts on the expired event")
            let settled = try await store.acceptTOTPCode(deviceID: device.id, step: 10, eventID: late.id, now: after)
            try check(
                settled?.status(at: after) == .approved && settled?.method == .totp && settled?.decidedBy == device.id,
                "approved by TOTP, not left expired: \(String(describing: settled))")
            try check(
                try await store.event(id: late.id)?.status(at: after + 3600) == .approved, "and it reads so later")

            let withdrawn = Fixture.event(user: "hugo")
            try await store.insertPendingEvent(withdrawn, maxPending: 3, now: Fixture.t0)
            _ = try await store.withdrawEvent(id: withdrawn.id, now: Fixture.t0 + 5)
            try await checkThrows(.conflict, "a withdrawn event counts no attempt") {
                try await store.reserveCodeAttempt(
                    issuer: "ck_app", clientUserID: "hugo", eventID: withdrawn.id, limits: limits, now: after)
            }
            try await checkThrows(.conflict, "and takes no code") {
                try await store.acceptTOTPCode(deviceID: device.id, step: 11, eventID: withdrawn.id, now: after)
            }
            try check(
                try await store.event(id: withdrawn.id)?.statusReason == .withdrawn, "it stays withdrawn")

            let old = Fixture.event(user: "hugo")
            try await store.insertPendingEvent(old, maxPending: 3, now: Fixture.t0)
            try await checkThrows(.conflict, "an event expired longer ago than the window counts no attempt") {
                try await store.reserveCodeAttempt(
                    issuer: "ck_app", clientUserID: "hugo", eventID: old.id, limits: limits,
                    now: Fixture.t0 + 60 + CodeLimits.lateCodeWindow)
            }
        },
        Case(name: "TOTP: attempts are counted before checking; 5 per event, then lock-outs that double") { store in
            let limits = CodeLimits(perEvent: 5, lockoutAfter: 7, firstLockout: 60, maxLockout: 200)
            let device = try await Fixture.enrolled(in: store, user: "jane")
            try await store.setTOTPSecret(Data([1]), deviceID: device.id)
            let event = Fixture.event(user: "jane", window: 3600)
            try await store.insertPendingEvent(event, maxPending: 3, now: Fixture.t0)
            for attempt in 1...5 {
                let counted = try await store.reserveCodeAttempt(
                    issuer: "ck_app", clientUserID: "jane", eventID: event.id, limits: limits, now: Fixture.t0)
                try check(
                    counted == CodeAttempt(eventAttemptsLeft: 5 - attempt, consecutiveFailures: attempt),
                    "attempt \(attempt): \(counted)")
            }
            let sixth = try await checkThrows(.limitReached(retryAfter: 3600), "a sixth on the event") {
                try await store.reserveCodeAttempt(
                    issuer: "ck_app", clientUserID: "jane", eventID: event.id, limits: limits, now: Fixture.t0)
            }
            try check(sixth.event?.codeAttempts == 5, "the event's own limit names the event")
            try check(try await store.event(id: event.id)?.codeAttempts == 5, "the refused one is not counted")
            try check(try await store.event(id: event.id)?.storedStatus == .pending, "the event stays pending")

            _ = try await store.reserveCodeAttempt(
                issuer: "ck_app", clientUserID: "jane", eventID: nil, limits: limits, now: Fixture.t0)
            let seventh = try await store.reserveCodeAttempt(
                issuer: "ck_app", clientUserID: "jane", eventID: nil, limits: limits, now: Fixture.t0)
            try check(seventh.consecutiveFailures == 7, "seven failures in a row")
            try await checkThrows(.limitReached(retryAfter: 60), "locked out for a minute") {
                try await store.reserveCodeAttempt(
                    issuer: "ck_app", clientUserID: "jane", eventID: nil, limits: limits, now: Fixture.t0 + 0.5)
            }
            let locked = try await checkThrows(.limitReached(retryAfter: 60), "locked out, with an event") {
                try await store.reserveCodeAttempt(
                    issuer: "ck_app", clientUserID: "jane", eventID: event.id, limits: limits, now: Fixture.t0 + 0.5)
            }
            try check(locked.event == nil, "the user's lock-out names no event")
            _ = try await store.reserveCodeAttempt(
                issuer: "ck_app", clientUserID: "jane", eventID: nil, limits: limits, now: Fixture.t0 + 60)
            try await checkThrows(.limitReached(retryAfter: 120), "then two") {
                try await store.reserveCodeAttempt(
                    issuer: "ck_app", clientUserID: "jane", eventID: nil, limits: limits, now: Fixture.t0 + 60)
            }
            _ = try await store.reserveCodeAttempt(
                issuer: "ck_app", clientUserID: "jane", eventID: nil, limits: limits, now: Fixture.t0 + 180)
            _ = try await store.reserveCodeAttempt(
                issuer: "ck_app", clientUserID: "jane", eventID: nil, limits: limits, now: Fixture.t0 + 380)
            try await checkThrows(.limitReached(retryAfter: 200), "never longer than the maximum") {
                try await store.reserveCodeAttempt(
                    issuer: "ck_app", clientUserID: "jane", eventID: nil, limits: limits, now: Fixture.t0 + 380)
            }
            _ = try await store.reserveCodeAttempt(
                issuer: "ck_app", clientUserID: "ivan", eventID: nil, limits: limits, now: Fixture.t0 + 380)

            try await store.acceptTOTPCode(deviceID: device.id, step: 1, eventID: nil, now: Fixture.t0 + 580)
            let fresh = try await store.reserveCodeAttempt(
                issuer: "ck_app", clientUserID: "jane", eventID: nil, limits: limits, now: Fixture.t0 + 580)
            try check(fresh.consecutiveFailures == 1, "a matching code clears the failures")

            let settled = Fixture.event(user: "jane", at: Fixture.t0 + 580)
            try await store.insertPendingEvent(settled, maxPending: 3, now: Fixture.t0 + 580)
            try await store.acceptTOTPCode(deviceID: device.id, step: 2, eventID: settled.id, now: Fixture.t0 + 581)
            try await checkThrows(.conflict, "a settled event") {
                try await store.reserveCodeAttempt(
                    issuer: "ck_app", clientUserID: "jane", eventID: settled.id, limits: limits, now: Fixture.t0 + 582)
            }
            try await checkThrows(.notFound, "an event of another user") {
                try await store.reserveCodeAttempt(
                    issuer: "ck_app", clientUserID: "ivan", eventID: settled.id, limits: limits, now: Fixture.t0 + 582)
            }
        },
        Case(name: "recovery codes: single use, replaced as a set, and only for their own user") { store in
            _ = try await Fixture.enrolled(in: store, user: "kim")
            let first = [Data([1]), Data([2])]
            try await store.replaceRecoveryCodes(first, issuer: "ck_app", clientUserID: "kim", now: Fixture.t0)
            try await store.replaceRecoveryCodes(
                [Data([3]), Data([4]), Data([5])], issuer: "ck_app", clientUserID: "kim", now: Fixture.t0 + 1)
            try check(try await store.recoveryCodesLeft(issuer: "ck_app", clientUserID: "kim") == 3, "the new set")
            let lost = Fixture.device(user: "kim")
            try await checkThrows(.notFound, "a code of the replaced set") {
                try await store.enrollDevice(
                    lost, consumingRecoveryCode: Data([1]), author: Fixture.author, now: Fixture.t0 + 2)
            }
            try await checkThrows(.notFound, "kim's code for another user") {
                try await store.enrollDevice(
                    Fixture.device(user: "lee"), consumingRecoveryCode: Data([3]), author: Fixture.author,
                    now: Fixture.t0 + 2)
            }
            let author = ChangeAuthor(actor: ChangeAuthor.recoveryCode, ip: "192.0.2.9")
            try await store.enrollDevice(lost, consumingRecoveryCode: Data([3]), author: author, now: Fixture.t0 + 3)
            try check(try await store.device(id: lost.id) == lost, "enrolled")
            try check(
                try await store.deviceChanges(issuer: "ck_app", clientUserID: "kim", limit: 1).first?.author == author,
                "recorded as a recovery")
            try check(try await store.recoveryCodesLeft(issuer: "ck_app", clientUserID: "kim") == 2, "one used")
            try await checkThrows(.notFound, "the same code twice") {
                try await store.enrollDevice(
                    Fixture.device(user: "kim"), consumingRecoveryCode: Data([3]), author: author, now: Fixture.t0 + 4)
            }
            try await checkThrows(.alreadyExists, "an enrolled key") {
                try await store.enrollDevice(
                    lost, consumingRecoveryCode: Data([4]), author: author, now: Fixture.t0 + 5)
            }
            try check(try await store.recoveryCodesLeft(issuer: "ck_app", clientUserID: "kim") == 2, "kept usable")
        },
    ]
}
