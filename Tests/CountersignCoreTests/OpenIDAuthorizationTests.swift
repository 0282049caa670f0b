import CountersignCore
import Foundation
import Testing

@Suite("sign-in by approval: the authorization request's rules")
struct OpenIDAuthorizationTests {
    static let challenge = PKCE.challenge(for: PKCE.newVerifier())

    static func check(_ changes: [String: String?] = [:], allowed: [String] = ["openid", "profile"])
        -> Result<OpenIDAuthorization, OpenIDAuthorization.Refusal>
    {
        var query: [String: String] = [
            "response_type": "code", "client_id": "ck_app", "redirect_uri": "https://app.example/cb",
            "scope": "openid profile", "code_challenge": challenge, "code_challenge_method": "S256", "state": "s",
            "nonce": "n",
        ]
        for (name, value) in changes { query[name] = value }
        return OpenIDAuthorization.check({ query[$0] }, allowed: allowed)
    }

    static func refusal(_ changes: [String: String?]) -> String? {
        if case .failure(let refusal) = check(changes) { refusal.error.rawValue } else { nil }
    }

    @Test("which page answers is the app's choice, never the request's")
    func pageChoice() {
        #expect(OpenIDAuthorization.signsIn(registered: OpenIDClientRegistration(scopes: ["openid"])))
        #expect(!OpenIDAuthorization.signsIn(registered: nil))
    }

    @Test("a confidential app's code is spent only with its secret; a public app's with PKCE alone")
    func clientAuthentication() {
        let confidential = OpenIDClientRegistration(scopes: ["openid"])
        #expect(confidential.refusal(authenticated: false)?.contains("client_secret_basic") == true)
        #expect(confidential.refusal(authenticated: true) == nil)
        let publicClient = OpenIDClientRegistration(scopes: ["openid"], isPublic: true)
        #expect(publicClient.refusal(authenticated: false) == nil)
        #expect(publicClient.refusal(authenticated: true) == nil, "a public app that sends its secret anyway")
    }

    @Test("the scopes an app may register")
    func registering() {
        #expect(OpenIDAuthorization.problem(registering: ["openid", "profile", "email"]) == nil)
        #expect(OpenIDAuthorization.problem(registering: ["openid"]) == nil)
        #expect(OpenIDAuthorization.problem(registering: ["profile"]) != nil, "openid is required")
        #expect(OpenIDAuthorization.problem(registering: ["openid", "phone"]) != nil, "not one the broker gives")
        #expect(OpenIDAuthorization.problem(registering: ["openid", "openid"]) != nil)
    }

    @Test("the user name's claims: profile always, email only when it is one")
    func nameClaims() {
        func claims(_ scope: String, _ user: String) -> (String?, String?) {
            let signIn = OpenIDSignIn(
                eventID: "ev_x", apiKeyID: "ck_a", redirectURI: "https://a/cb", codeChallenge: "c", state: nil,
                nonce: nil, scope: scope, createdAt: Date())
            return signIn.nameClaims(user: user)
        }
        #expect(claims("openid", "alice") == (nil, nil))
        #expect(claims("openid profile", "alice") == ("alice", nil))
        #expect(claims("openid email", "alice") == (nil, nil), "not an email address")
        #expect(claims("openid profile email", "alice@example.com") == ("alice@example.com", "alice@example.com"))
        #expect(claims("openid email", "Alice@Example.com") == (nil, nil), "only as it is written, lower case")
    }

    @Test("a good request: scopes granted are those given, PKCE and state kept")
    func valid() throws {
        let valid = try Self.check(["scope": "openid profile email offline_access", "login_hint": "alice"]).get()
        #expect(valid.scope == "openid profile" && valid.codeChallenge == Self.challenge, "email is not by default")
        #expect(valid.state == "s" && valid.nonce == "n" && valid.loginHint == "alice")
        #expect(!valid.requiresUserVerification)
        let registered = try Self.check(["scope": "openid profile email"], allowed: ["openid", "email"]).get()
        #expect(registered.scope == "openid email", "what was asked and registered")
        #expect(try Self.check(["acr_values": ApprovalAuthentication.passkeyACR]).get().requiresUserVerification)
        #expect(try Self.check(["login_hint": "a/b"]).get().loginHint == nil, "not a user name: not prefilled")
        #expect(try Self.check(["prompt": "login consent", "max_age": "0"]).get().scope == "openid profile")
    }

    @Test("each refusal names the error OAuth and OpenID Connect give it")
    func refusals() {
        #expect(Self.refusal(["response_type": "token"]) == "unsupported_response_type")
        #expect(Self.refusal(["response_type": nil]) == "invalid_request", "RFC 6749 §4.1.2.1: missing")
        #expect(Self.refusal(["response_mode": "fragment"]) == "invalid_request")
        #expect(Self.refusal(["request": "eyJ"]) == "request_not_supported")
        #expect(Self.refusal(["request_uri": "https://x"]) == "request_uri_not_supported")
        #expect(Self.refusal(["scope": "profile"]) == "invalid_scope")
        #expect(Self.refusal(["prompt": "none"]) == "login_required", "no session answers without the person")
        #expect(Self.refusal(["prompt": "none login"]) == "invalid_request")
        #expect(Self.refusal(["max_age": "-1"]) == "invalid_request")
        #expect(Self.refusal(["max_age": "soon"]) == "invalid_request")
        #expect(Self.refusal(["code_challenge_method": nil]) == "invalid_request", "PKCE is required")
        #expect(Self.refusal(["code_challenge_method": "plain"]) == "invalid_request")
        #expect(Self.refusal(["code_challenge": nil]) == "invalid_request")
        #expect(Self.refusal(["code_challenge": "short"]) == "invalid_request")
        #expect(Self.refusal(["state": String(repeating: "s", count: 513)]) == "invalid_request")
        #expect(Self.refusal(["nonce": String(repeating: "n", count: 257)]) == "invalid_request")
    }

    @Test("the sub: stable per app and user name, different across apps, never the name")
    func subject() {
        let alice = OpenIDSubject.of(apiKeyID: "ck_a", user: "alice")
        #expect(alice == OpenIDSubject.of(apiKeyID: "ck_a", user: "alice"))
        #expect(alice != OpenIDSubject.of(apiKeyID: "ck_b", user: "alice"))
        #expect(alice != OpenIDSubject.of(apiKeyID: "ck_a", user: "alice2"))
        #expect(
            OpenIDSubject.of(apiKeyID: "ck_a", user: "bc") != OpenIDSubject.of(apiKeyID: "ck_ab", user: "c"),
            "the app id and the name cannot run into each other")
        #expect(!alice.contains("alice") && alice.count == 43 && alice.allSatisfy(\.isASCII))
    }

    @Test("the outcome the page shows and the app hears, for each way a login ends")
    func outcomes() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var event = ApprovalEvent(
            id: "ev_x", createdAt: now, updatedAt: now, issuer: "ck_a", clientUserID: "alice", name: EventName.login,
            ip: "192.0.2.1", location: "Unknown", method: .trustedDevice, storedStatus: .pending, expiresAt: now + 60,
            details: nil, requesterName: nil, nonce: "n", matchNumber: "42", wrongMatches: 0,
            requesterTokenDigest: nil, decidedBy: nil, decidedAt: nil, decision: nil)
        #expect(OpenIDSignInOutcome.of(event, now: now) == .waiting)
        guard case .ended(_, let expired) = OpenIDSignInOutcome.of(event, now: now + 60) else {
            Issue.record("expired")
            return
        }
        #expect(expired.contains("in time"))
        event.storedStatus = .approved
        event.decidedAt = now + 10
        #expect(OpenIDSignInOutcome.of(event, now: now + 20) == .approved)
        event.decidedAt = now + 70
        #expect(OpenIDSignInOutcome.of(event, now: now + 80) != .approved, "a code after the window signs in nobody")
        event.storedStatus = .rejected
        event.storedReason = .fraudReported
        guard case .ended(let message, _) = OpenIDSignInOutcome.of(event, now: now) else {
            Issue.record("fraud")
            return
        }
        #expect(message.contains("not yours"))
        event.storedStatus = .expired
        event.storedReason = nil
        event.withdrawnAt = now
        guard case .ended(let cancelled, _) = OpenIDSignInOutcome.of(event, now: now) else {
            Issue.record("withdrawn")
            return
        }
        #expect(cancelled.contains("cancelled"))
    }

    @Test("a code: spent once, a replay told apart from a stranger's guess")
    func codeRule() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var signIn = OpenIDSignIn(
            eventID: "ev_x", apiKeyID: "ck_a", redirectURI: "https://a/cb", codeChallenge: "c", state: nil,
            nonce: nil, scope: "openid", createdAt: now, codeDigest: Data([1]), codeExpiresAt: now + 120)
        #expect(OpenIDCodeRule.decide(nil, digest: Data([1]), now: now) == .unknown)
        #expect(OpenIDCodeRule.decide(signIn, digest: Data([2]), now: now) == .unknown)
        #expect(OpenIDCodeRule.decide(signIn, digest: Data([1]), now: now) == .spend)
        #expect(OpenIDCodeRule.decide(signIn, digest: Data([1]), now: now + 120) == .expired)
        signIn.endedAt = now
        #expect(OpenIDCodeRule.decide(signIn, digest: Data([1]), now: now) == .ended)
        signIn.redeemedAt = now
        #expect(OpenIDCodeRule.decide(signIn, digest: Data([1]), now: now + 500) == .replayed, "late or not")
        #expect(OpenIDCodeRule.decide(signIn, digest: Data([2]), now: now) == .unknown, "a guess is no replay")
    }

    @Test("a code's change: a spend stores what it buys, a login gone buys nothing, a replay ends the sign-in")
    func codeChanges() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let signIn = OpenIDSignIn(
            eventID: "ev_x", apiKeyID: "ck_a", redirectURI: "https://a/cb", codeChallenge: "c", state: nil,
            nonce: nil, scope: "openid", createdAt: now, codeDigest: Data([1]), codeExpiresAt: now + 120)
        let token = RefreshTokenRecord(
            digest: Data([9]), familyID: signIn.family, apiKeyID: "ck_a", identityID: "", createdAt: now,
            expiresAt: now + 3600, clientUserID: "alice")
        let (spend, spent) = OpenIDCodeRule.redemption(
            of: signIn, digest: Data([1]), confidential: true, buying: token, now: now + 1)
        #expect(spend == .spend && spent.storing == token)
        #expect(spent.signIn.redeemedAt == now + 1 && spent.signIn.confidential && spent.signIn.endedAt == nil)
        let (gone, untouched) = OpenIDCodeRule.redemption(
            of: signIn, digest: Data([1]), confidential: true, buying: nil, now: now + 1)
        #expect(gone == .unknown && untouched == OpenIDSignInChange(signIn), "a collected login buys nothing")
        let (replay, ended) = OpenIDCodeRule.redemption(
            of: spent.signIn, digest: Data([1]), confidential: false, buying: token, now: now + 2)
        #expect(replay == .replayed && ended.signIn.endedAt == now + 2 && ended.storing == nil)
        let (stranger, same) = OpenIDCodeRule.redemption(
            of: spent.signIn, digest: Data([2]), confidential: false, buying: token, now: now + 2)
        #expect(stranger == .unknown && same == OpenIDSignInChange(spent.signIn))

        #expect(signIn.issuingCode(digest: Data([3]), expiresAt: now + 5)?.codeDigest == Data([3]))
        #expect(spent.signIn.issuingCode(digest: Data([3]), expiresAt: now + 5) == nil, "not once spent")
        #expect(signIn.ending(at: now)?.issuingCode(digest: Data([3]), expiresAt: now + 5) == nil, "not once ended")
        #expect(ended.signIn.ending(at: now + 3) == nil, "ended once")
    }

    @Test("the browser named for the approver")
    func browsers() {
        let firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
        let chrome =
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
        let iphone =
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
        #expect(BrowserSummary.of(userAgent: firefox) == "Firefox on Linux")
        #expect(BrowserSummary.of(userAgent: chrome) == "Chrome on Linux")
        #expect(BrowserSummary.of(userAgent: iphone) == "Safari on iPhone")
        #expect(BrowserSummary.of(userAgent: "") == "A web browser")
        #expect(BrowserSummary.of(userAgent: "\u{202E}evil") == "A web browser", "nothing of it is shown as sent")
    }

    @Test("an authorization code names the flow that redeems it, or none")
    func authorizationCodes() {
        #expect(AuthorizationCode(OpenIDSignIn.code(eventID: "ev_abc", secret: "s3cret")) == .signIn(eventID: "ev_abc"))
        #expect(
            AuthorizationCode(AuthorizationCode.verificationCode(challengeID: 42, secret: "s3cret"))
                == .verification(challengeID: 42))
        for junk in ["", "42", "42.", ".s", "ev_abc", "x.y", "42.a.b", "ev_abc.s.t"] {
            #expect(AuthorizationCode(junk) == nil, "\(junk)")
        }
    }

    @Test("a refresh family's id names its grant, and reads back as the same")
    func refreshFamilies() {
        for family in [
            RefreshFamily.signIn(eventID: "ev_abc"), .ciba(eventID: "ev_def"), .verification(challengeID: 7),
        ] {
            #expect(RefreshFamily(family.id) == family, "\(family.id)")
        }
        #expect(RefreshFamily.signIn(eventID: "ev_abc").id == "oidc:ev_abc")
        for junk in ["", "oidc:", "ev_abc", "challenge:x", "other:1", ":ev"] {
            #expect(RefreshFamily(junk) == nil, "\(junk)")
        }
    }

}
