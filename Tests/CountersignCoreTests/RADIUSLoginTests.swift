import CountersignCore
import Foundation
import Testing

@Suite("RADIUS logins: what each state of the event is answered, the State, client names and secrets")
struct RADIUSLoginTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func event(_ change: (inout ApprovalEvent) -> Void = { _ in }) -> ApprovalEvent {
        var event = ApprovalEvent.pending(
            issuer: "ck_app", user: "alice", name: EventName.login, ip: "198.51.100.23", location: nil, details: nil,
            requesterName: "office-vpn", matchNumber: "42", requesterTokenDigest: Data(), newDevice: nil,
            now: now - 10, window: 60)
        change(&event)
        return event
    }

    @Test("pending: asked again with the number and the window left; decided: Accept or Reject by why")
    func verdicts() {
        #expect(
            RADIUSLogin.verdict(for: event(), at: now)
                == .waiting(
                    message:
                        "Not approved yet. Approve on your device: type 42, then press Enter here (or type a TOTP code)",
                    secondsLeft: 50))
        #expect(RADIUSLogin.prompt(for: event { $0.matchNumber = nil }) == "Approve the request on your device")
        #expect(
            RADIUSLogin.verdict(for: event { $0.storedStatus = .approved }, at: now)
                == .accept(message: "Approved on your device"))
        #expect(
            RADIUSLogin.verdict(
                for: event {
                    $0.storedStatus = .approved
                    $0.method = .totp
                }, at: now) == .accept(message: "Approved with a TOTP code"))
        #expect(
            RADIUSLogin.verdict(
                for: event {
                    $0.storedStatus = .approved
                    $0.decidedAt = now - 31
                }, at: now) == .reject(message: "This login is over; start again"),
            "a State is spent 30 s after the approval")
        #expect(
            RADIUSLogin.verdict(for: event { $0.storedStatus = .rejected }, at: now)
                == .reject(message: "Refused on your device"))
        #expect(
            RADIUSLogin.verdict(
                for: event {
                    $0.storedStatus = .rejected
                    $0.storedReason = .fraudReported
                }, at: now) == .reject(message: "Refused: a request was reported as not yours; ask your administrator"))
        #expect(
            RADIUSLogin.verdict(for: event(), at: now + 60) == .reject(message: "No answer in time; try again"),
            "its window ran out")
        #expect(
            RADIUSLogin.verdict(for: event().withdrawn(at: now - 1), at: now)
                == .reject(message: "The request was withdrawn"))
    }

    @Test("a State's event belongs to the client that opened it, for its user, through RADIUS only")
    func belongs() {
        let client = RADIUSClient(
            name: "office-vpn", network: "192.0.2.0/24", apiKeyID: "ck_app", secret: "0123456789abcdef", createdAt: now)
        let login = event { $0.channel = .radius }
        #expect(RADIUSLogin.belongs(login, to: client, user: "alice"))
        #expect(!RADIUSLogin.belongs(login, to: client, user: "bob"))
        #expect(!RADIUSLogin.belongs(event(), to: client, user: "alice"), "a request of the REST API")
        var branch = client
        branch.name = "branch-vpn"
        #expect(!RADIUSLogin.belongs(login, to: branch, user: "alice"), "another client of the same app")
        var otherApp = client
        otherApp.apiKeyID = "ck_other"
        #expect(!RADIUSLogin.belongs(login, to: otherApp, user: "alice"))
    }

    @Test("an integer attribute is four octets, most significant first")
    func integerAttribute() {
        #expect(RADIUSAttribute(.sessionTimeout, integer: 60).value == [0, 0, 0, 60])
        #expect(RADIUSAttribute(.sessionTimeout, integer: 0x0102_0304).value == [1, 2, 3, 4])
    }

    @Test("a code is six digits, nothing else")
    func codes() {
        #expect(RADIUSLogin.isCode("012345"))
        for password in ["", "12345", "1234567", "12345a", "１２３４５６", "12 456"] {
            #expect(!RADIUSLogin.isCode(password), "\(password)")
        }
    }

    @Test("the State round-trips; anything else is not one")
    func state() {
        let state = RADIUSState(eventID: "ev_abc-_9", requesterToken: "tok_EN-_x")
        #expect(RADIUSState(state.bytes) == state)
        for text in ["", "cs1:", "cs1:ev_a", "cs1::tok", "cs1:ev_a:", "cs2:ev_a:tok", "cs1:ev_a:tok:more"] {
            #expect(RADIUSState(Array(text.utf8)) == nil, "\(text)")
        }
    }

    @Test("client names and shared secrets: what is refused, and a new secret is strong")
    func validation() {
        #expect(RADIUSClient.problem(withName: "office-vpn.eu_1") == nil)
        for name in ["", "Office", "vpn one", "vpn/1", String(repeating: "a", count: 65)] {
            #expect(RADIUSClient.problem(withName: name) != nil, "\(name)")
        }
        #expect(RADIUSClient.problem(withSecret: "exactly16charsOK") == nil)
        for secret in ["short", "with a space in it!", "tab\tinside-the-secret", String(repeating: "x", count: 129)] {
            #expect(RADIUSClient.problem(withSecret: secret) != nil, "\(secret)")
        }
        let secrets = Set((0..<100).map { _ in RADIUSClient.newSecret() })
        #expect(
            secrets.count == 100 && secrets.allSatisfy { RADIUSClient.problem(withSecret: $0) == nil && $0.count == 32 }
        )
    }
}
