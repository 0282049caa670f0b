import CountersignBroker
import CountersignCore
import CountersignSQLite
import CountersignStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// A sign-in by approval at the token endpoint: a code spent twice after
/// its login was collected (the sign-in outlives its event while its
/// refresh tokens may, and a replay must still end it), and refreshes held
/// to the app's client type as it is registered now.
@Suite("OpenID sign-in at the token endpoint: late replays and client types")
struct OpenIDCodeReplayTests {
    /// A sign-in by approval of `alice`, approved by her device, with a code
    /// issued: what the token endpoint gets.
    static func approvedSignIn(_ broker: TestBroker, _ client: some TestClientProtocol) async throws
        -> (event: ApprovalEvent, code: String, verifier: String, redirectURI: String)
    {
        let alice = try await broker.enroll(client)
        let now = broker.clock.now
        let event = ApprovalEvent(
            id: ApprovalEvent.newID(), createdAt: now, updatedAt: now, issuer: broker.apiKeyID,
            clientUserID: alice.user, name: EventName.login, ip: "127.0.0.1", location: "Unknown",
            method: .trustedDevice, storedStatus: .pending, expiresAt: now + 60, details: nil,
            requesterName: "Chrome on Linux", nonce: SecretToken.generate(bytes: 16), matchNumber: nil,
            wrongMatches: 0, requesterTokenDigest: nil, decidedBy: nil, decidedAt: nil, decision: nil)
        let verifier = PKCE.newVerifier()
        let redirectURI = "http://127.0.0.1:9/callback"
        try await broker.store.insertPendingEvent(
            event, by: .backend, limits: PendingLimits(), announcing: [],
            attached: .signIn(
                OpenIDSignIn(
                    eventID: event.id, apiKeyID: broker.apiKeyID, redirectURI: redirectURI,
                    codeChallenge: PKCE.challenge(for: verifier), state: nil, nonce: nil, scope: "openid",
                    createdAt: now)),
            now: now)
        let item = try #require(try await broker.inbox(client, alice.device).first { $0.event.ID == event.id })
        let approval = try await alice.device.decision(on: item, .approve, match: nil, now: now)
        #expect(try await broker.submit(client, eventID: event.id, decision: approval).status == .ok)
        let code = OpenIDSignIn.code(eventID: event.id, secret: SecretToken.generate())
        try await broker.store.issueOpenIDCode(
            eventID: event.id, digest: SecretToken.digest(code), expiresAt: now + OpenIDSignIn.codeLifetime)

        return (event, code, verifier, redirectURI)
    }

    /// A form posted to the token endpoint, with the app's secret or without.
    static func token(_ client: some TestClientProtocol, _ fields: [String: String], secret: String?) async throws
        -> TestResponse
    {
        var fields = fields
        fields["client_secret"] = secret
        let form = fields.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)" }
            .joined(separator: "&")
        return try await client.execute(
            uri: "/oauth/token", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
            body: ByteBuffer(string: form))
    }

    @Test("a sign-in spent while its app was public refreshes without the secret only while the app is public")
    func publicThenConfidential() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            try await broker.store.setOpenIDClient(
                OpenIDClientRegistration(scopes: ["openid"], isPublic: true), apiKeyID: broker.apiKeyID,
                now: broker.clock.now)
            let (_, code, verifier, redirectURI) = try await Self.approvedSignIn(broker, client)
            let spent = try await Self.token(
                client,
                [
                    "grant_type": "authorization_code", "client_id": broker.apiKeyID, "code": code,
                    "code_verifier": verifier, "redirect_uri": redirectURI,
                ], secret: nil)
            #expect(spent.status == .ok, "\(String(buffer: spent.body))")
            let first = try #require(
                try JSONSerialization.jsonObject(with: Data(spent.body.readableBytesView)) as? [String: Any])
            func refresh(_ token: String, secret: String?) async throws -> TestResponse {
                try await Self.token(
                    client, ["grant_type": "refresh_token", "client_id": broker.apiKeyID, "refresh_token": token],
                    secret: secret)
            }
            let refreshed = try await refresh(try #require(first["refresh_token"] as? String), secret: nil)
            #expect(refreshed.status == .ok, "a public app refreshes with its client id alone")
            let second = try #require(
                try JSONSerialization.jsonObject(with: Data(refreshed.body.readableBytesView)) as? [String: Any])
            let next = try #require(second["refresh_token"] as? String)

            // Registered as confidential since: its old sign-ins need the secret too.
            try await broker.store.setOpenIDClient(
                OpenIDClientRegistration(scopes: ["openid"]), apiKeyID: broker.apiKeyID, now: broker.clock.now)
            let refused = try await refresh(next, secret: nil)
            #expect(
                refused.status == .unauthorized && String(buffer: refused.body).contains(#""error":"invalid_client""#),
                "\(String(buffer: refused.body))")
            #expect(try await refresh(next, secret: broker.apiSecret).status == .ok, "with the secret it does")
        }
    }

    @Test("the replay buys nothing, ends the sign-in and revokes the refresh token the code bought")
    func replayAfterCollection() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let (event, code, verifier, redirectURI) = try await Self.approvedSignIn(broker, client)
            let now = broker.clock.now
            func redeem(secret: String? = broker.apiSecret) async throws -> TestResponse {
                let form = [
                    "grant_type=authorization_code", "client_id=\(broker.apiKeyID)", "code=\(code)",
                    secret.map { "client_secret=\($0)" }, "code_verifier=\(verifier)",
                    "redirect_uri=\(redirectURI.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)",
                ].compactMap { $0 }.joined(separator: "&")
                return try await client.execute(
                    uri: "/oauth/token", method: .post,
                    headers: [.contentType: "application/x-www-form-urlencoded"], body: ByteBuffer(string: form))
            }
            // Without the app's secret: refused before the code is read.
            let unauthenticated = try await redeem(secret: nil)
            #expect(
                unauthenticated.status == .unauthorized
                    && String(buffer: unauthenticated.body).contains(#""error":"invalid_client""#),
                "\(String(buffer: unauthenticated.body))")
            let spent = try await redeem()
            #expect(spent.status == .ok, "\(String(buffer: spent.body))")
            let tokens = try #require(
                try JSONSerialization.jsonObject(with: Data(spent.body.readableBytesView)) as? [String: Any])
            let refresh = try #require(tokens["refresh_token"] as? String)
            #expect(
                try await broker.store.refreshToken(digest: SecretToken.digest(refresh))?.familyID
                    == RefreshFamily.signIn(eventID: event.id).id, "the refresh token was stored with the spend")

            // The login is collected; the sign-in stays while its refresh token may live.
            _ = try await broker.store.garbageCollect(now: now + 7200, eventsEndedBefore: now + 3600)
            #expect(try await broker.store.event(id: event.id) == nil)
            #expect(try await broker.store.openIDSignIn(eventID: event.id)?.endedAt == nil)

            let replayed = try await redeem()
            #expect(
                replayed.status == .badRequest && String(buffer: replayed.body).contains(#""error":"invalid_grant""#),
                "\(String(buffer: replayed.body))")
            #expect(try await broker.store.openIDSignIn(eventID: event.id)?.endedAt != nil, "the sign-in ended")
            #expect(
                try await broker.store.refreshToken(digest: SecretToken.digest(refresh))?.revokedAt != nil,
                "its refresh token revoked")
        }
    }
}
