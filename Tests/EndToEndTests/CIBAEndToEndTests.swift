import CountersignClient
import CountersignCore
import Foundation
import NIOHTTP1
import Testing

/// OpenID CIBA against a CIBA client written from the specification alone
/// (scripts/ciba-client.py: requests and joserfc), with the real broker and
/// a real `device-agent` answering.
@Suite("end to end: OpenID CIBA with an independent client", .serialized)
struct CIBAEndToEndTests {
    /// The client process, started for `user` with `options`.
    func client(_ broker: LiveBroker, user: String = "alice", _ options: [String] = []) throws -> RunningProcess {
        try RunningProcess(
            "/usr/bin/env",
            [
                "python3", scriptsDirectory.appendingPathComponent("ciba-client.py").path, broker.url,
                broker.apiKeyID, broker.apiSecret, user,
            ] + options)
    }

    /// The JSON object the client printed last.
    func result(of process: RunningProcess) throws -> [String: Any] {
        let line = try #require(process.text.split(separator: "\n").last { $0.hasPrefix("{") }, "\(process.text)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    /// The event a client's `auth_req_id` names, once it printed it.
    func eventID(of process: RunningProcess) async throws -> String {
        try await process.waitFor(#"auth_req_id: (ev_[A-Za-z0-9_-]+)\."#, timeout: .seconds(120))
    }

    @Test("poll mode: the device approves what the binding message says; the ID token verifies; once only")
    func approved() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let ciba = try client(broker, ["--binding-message", "Pay 42 EUR to ACME", "--auth", "post"])
        let eventID = try await eventID(of: ciba)

        // The approver sees a request like any other, the binding message as its details.
        let event = try await broker.backend.event(id: eventID)
        #expect(event.details == "Pay 42 EUR to ACME" && event.status == .pending)
        let approve = try broker.agent(["approve", "--event", eventID, "--yes"], configDirectory: laptop)
        #expect(try await approve.exitCode(timeout: .seconds(120)) == 0, "\(approve.text)")
        #expect(approve.text.contains("Pay 42 EUR to ACME"))

        #expect(try await ciba.exitCode(timeout: .seconds(120)) == 0, "\(ciba.text)")
        let outcome = try result(of: ciba)
        #expect(outcome["outcome"] as? String == "tokens", "\(outcome)")
        let claims = try #require(outcome["claims"] as? [String: Any])
        #expect(claims["sub"] as? String == "alice" && claims["aud"] as? String == broker.apiKeyID)
        #expect(claims["acr"] as? String == ApprovalAuthentication.deviceACR)
        #expect(claims["amr"] as? [String] == ["swk"], "RFC 8176: the device's software key")
        #expect((claims["urn:openid:params:jwt:claim:auth_req_id"] as? String)?.hasPrefix(eventID + ".") == true)
        #expect(outcome["second_redemption"] as? String == "invalid_grant", "an auth_req_id works once")
        #expect(outcome["refreshed"] as? Int == 200 && outcome["refreshed_sub"] as? String == "alice")
        #expect(outcome["refresh_without_secret"] as? String == "invalid_client")

        // The device's signed decision holds for this event, as for any other.
        let devices = try await broker.backend.devices(user: "alice")
        let decided = try await broker.backend.event(id: eventID)
        _ = try await broker.backend.verifyDecision(of: decided, app: "demo", pinnedKeys: devices.map(\.publicKey))
    }

    @Test("ping mode: the decision reaches the client's endpoint with its bearer token, then the token endpoint")
    func ping() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let port = try freePort()
        let register = try RunningProcess(
            "device-broker",
            ["apikey", "set-ciba-ping", broker.apiKeyID, "http://127.0.0.1:\(port)/ciba"] + broker.storeArguments)
        #expect(try await register.exitCode(timeout: .seconds(120)) == 0, "\(register.text)")
        #expect(register.text.contains("ping mode"))

        let ciba = try client(broker, ["--ping-port", String(port), "--binding-message", "Sign in to the console"])
        let eventID = try await eventID(of: ciba)
        let approve = try broker.agent(["approve", "--event", eventID, "--yes"], configDirectory: laptop)
        #expect(try await approve.exitCode(timeout: .seconds(120)) == 0, "\(approve.text)")
        #expect(try await ciba.exitCode(timeout: .seconds(180)) == 0, "\(ciba.text)")
        let outcome = try result(of: ciba)
        #expect(outcome["outcome"] as? String == "tokens", "\(outcome)")
        #expect(outcome["without_notification_token"] as? String == "invalid_request")
        let notification = try #require(outcome["notification"] as? [String: Any])
        #expect(
            notification["path"] as? String == "/ciba" && notification["content_type"] as? String == "application/json")
        #expect(notification["bearer_matches"] as? Bool == true && notification["auth_req_id_matches"] as? Bool == true)
        #expect(outcome["notifications"] as? Int == 1, "one notification per request")
        #expect((outcome["claims"] as? [String: Any])?["sub"] as? String == "alice")

        // Back to polling: a notification token is refused again.
        let back = try RunningProcess(
            "device-broker", ["apikey", "set-ciba-ping", broker.apiKeyID, "--poll"] + broker.storeArguments)
        #expect(try await back.exitCode(timeout: .seconds(120)) == 0, "\(back.text)")
        let refused = try RunningProcess(
            "device-broker",
            ["apikey", "set-ciba-ping", broker.apiKeyID, "http://169.254.169.254/latest"] + broker.storeArguments)
        #expect(try await refused.exitCode(timeout: .seconds(120)) != 0, "plain http off loopback: \(refused.text)")
    }

    @Test("poll mode: a rejection is access_denied; nobody answering is expired_token")
    func deniedAndExpired() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let rejected = try client(broker, ["--binding-message", "Pay 999 EUR"])
        let eventID = try await eventID(of: rejected)
        let reject = try broker.agent(["approve", "--event", eventID, "--reject"], configDirectory: laptop)
        #expect(try await reject.exitCode(timeout: .seconds(120)) == 0, "\(reject.text)")
        #expect(try await rejected.exitCode(timeout: .seconds(120)) == 0, "\(rejected.text)")
        #expect(try result(of: rejected)["outcome"] as? String == "access_denied")

        let unanswered = try client(broker, ["--requested-expiry", "10"])
        _ = try await self.eventID(of: unanswered)
        #expect(try await unanswered.exitCode(timeout: .seconds(180)) == 0, "\(unanswered.text)")
        #expect(try result(of: unanswered)["outcome"] as? String == "expired_token")
    }

    @Test("each malformed request gets the specification's error, and discovery says what is supported")
    func errors() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        _ = try await broker.enrollMachine(name: "laptop")
        let ciba = try client(broker, ["--errors"])
        #expect(try await ciba.exitCode(timeout: .seconds(120)) == 0, "\(ciba.text)")
        let seen = try result(of: ciba) as? [String: String]
        #expect(
            seen == [
                "wrong_secret": "invalid_client", "no_secret": "invalid_client", "no_openid_scope": "invalid_scope",
                "id_token_hint": "invalid_request", "login_hint_token": "invalid_request",
                "two_hints": "invalid_request", "user_code": "invalid_request", "unknown_user": "unknown_user_id",
                "binding_message_control": "invalid_binding_message",
                "binding_message_long": "invalid_binding_message", "requested_expiry_large": "invalid_request",
                "requested_expiry_text": "invalid_request", "notification_token_in_poll_mode": "invalid_request",
                "unknown_auth_req_id": "invalid_grant", "first_poll": "authorization_pending",
                "second_poll_at_once": "slow_down", "tampered_secret": "invalid_grant",
                "poll_without_secret": "invalid_client", "poll_with_post_auth": "slow_down",
            ])

        // Another client's auth_req_id is unknown to this one.
        let eventID = try await eventID(of: ciba)
        let authReqID = String(try #require(ciba.text.firstMatch(of: /auth_req_id: (\S+)/)?.1))
        #expect(authReqID.hasPrefix(eventID))
        let other = try RunningProcess(
            "device-broker", ["apikey", "create", "--name", "other", "--json"] + broker.storeArguments)
        #expect(try await other.exitCode(timeout: .seconds(120)) == 0)
        let key = try #require(try JSONSerialization.jsonObject(with: other.json) as? [String: Any])
        var request = URLComponents()
        request.queryItems = [
            .init(name: "grant_type", value: "urn:openid:params:grant-type:ciba"),
            .init(name: "auth_req_id", value: authReqID), .init(name: "client_id", value: key["api_key_id"] as? String),
            .init(name: "client_secret", value: key["api_secret_key"] as? String),
        ]
        let answer = try await postForm(broker.url + "/oauth/token", form: request)
        #expect(answer.status == .badRequest && answer.page.contains("invalid_grant"), "\(answer.page)")
    }
}
