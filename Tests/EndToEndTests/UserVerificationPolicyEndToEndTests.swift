import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// An API key's user-verification policy, set by the operator with
/// `device-broker apikey` while the broker runs.
@Suite("end to end: an API key's user-verification policy")
struct UserVerificationPolicyEndToEndTests {
    /// Runs `device-broker apikey ARGUMENTS` on the broker's store.
    func apikey(_ broker: LiveBroker, _ arguments: [String]) async throws -> (Int32, String) {
        let process = try RunningProcess("device-broker", ["apikey"] + arguments + broker.storeArguments)
        return (try await process.exitCode(timeout: .seconds(120)), process.text)
    }

    /// The key's settings as the running broker reads them over REST.
    func settings(_ broker: LiveBroker) async throws -> [String: String] {
        var request = HTTPClientRequest(url: broker.url + "/api/v1/apikey")
        let credentials = Data("\(broker.apiKeyID):\(broker.apiSecret)".utf8).base64EncodedString()
        request.headers.add(name: "Authorization", value: "Basic \(credentials)")
        request.headers.add(name: "Connection", value: "close")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        #expect(response.status == .ok)
        let body = try await response.body.collect(upTo: 1 << 16)
        return try JSONDecoder().decode([String: String].self, from: Data(body.readableBytesView))
    }

    @Test(
        "create --user-verification and set-user-verification: listed, audited, read by the running broker at once; bad values refused"
    )
    func commandLine() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let (created, createText) = try await apikey(
            broker, ["create", "--name", "strict", "--user-verification", "required", "--json"])
        #expect(created == 0, "\(createText)")
        let document = try JSONSerialization.jsonObject(with: Data(createText.utf8)) as? [String: Any]
        #expect(document?["user_verification"] as? String == "required", "\(createText)")
        let strictID = try #require(document?["api_key_id"] as? String)
        let (badCreate, badCreateText) = try await apikey(
            broker, ["create", "--name", "odd", "--user-verification", "sometimes"])
        #expect(badCreate != 0 && badCreateText.contains("'required'"), "\(badCreateText)")

        // The demo key, made without the option, is discouraged until set.
        #expect(try await settings(broker)["user_verification"] == "discouraged")
        let (set, setText) = try await apikey(broker, ["set-user-verification", broker.apiKeyID, "required"])
        #expect(set == 0 && setText.contains("user verification required"), "\(setText)")
        #expect(try await settings(broker)["user_verification"] == "required", "read by the running broker at once")
        let requester = CountersignClient(broker: broker.url, apiKeyID: broker.apiKeyID)
        let ticket = try await requester.requestLogin(user: "alice", requesterName: "kiosk")
        #expect(ticket.event.userVerification == "required")

        let (wrong, wrongText) = try await apikey(broker, ["set-user-verification", broker.apiKeyID, "never"])
        #expect(wrong != 0 && wrongText.contains("'discouraged'"), "\(wrongText)")
        let (unknown, unknownText) = try await apikey(broker, ["set-user-verification", "ck_nope", "required"])
        #expect(unknown != 0 && unknownText.contains("no unrevoked API key ck_nope"), "\(unknownText)")

        let (lowered, loweredText) = try await apikey(
            broker, ["set-user-verification", broker.apiKeyID, "discouraged"])
        #expect(lowered == 0, "\(loweredText)")
        let (listed, listText) = try await apikey(broker, ["list"])
        #expect(listed == 0, "\(listText)")
        let lines = listText.split(separator: "\n")
        #expect(lines.first?.hasSuffix("\tUSER VERIFICATION") == true, "\(listText)")
        #expect(lines.contains { $0.hasPrefix(strictID + "\t") && $0.hasSuffix("\trequired") }, "\(listText)")
        #expect(lines.contains { $0.hasPrefix(broker.apiKeyID + "\t") && $0.hasSuffix("\tdiscouraged") })
        let (audited, auditText) = try await apikey(broker, ["audit", broker.apiKeyID])
        #expect(audited == 0, "\(auditText)")
        let actions = auditText.split(separator: "\n").map { $0.split(separator: "\t")[1] }
        #expect(
            actions == ["created", "user_verification_required", "user_verification_discouraged"], "\(auditText)")
    }

    @Test("device-agent login on a trusted device of a strict app waits for a passkey; Ctrl-C withdraws it")
    func trustedLogin() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let laptop = try await broker.enrollMachine(name: "laptop")
        let (set, setText) = try await apikey(broker, ["set-user-verification", broker.apiKeyID, "required"])
        #expect(set == 0, "\(setText)")
        let login = try broker.agent(["login"], configDirectory: laptop)
        let eventID = try await login.waitFor(#"approve request (ev_[A-Za-z0-9_-]+) with the passkey"#)
        let pending = try await broker.backend.event(id: eventID)
        #expect(pending.status == .pending && pending.userVerification == "required", "not approved by itself")
        kill(login.process.processIdentifier, SIGINT)
        #expect(try await login.exitCode() == 130, "\(login.text)")
        #expect(!login.text.contains("approved"), "\(login.text)")
        let withdrawn = try await broker.backend.event(id: eventID)
        #expect(withdrawn.status == .expired && withdrawn.statusReason == .withdrawn)
    }
}
