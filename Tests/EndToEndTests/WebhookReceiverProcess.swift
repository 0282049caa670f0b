import AsyncHTTPClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1

/// scripts/webhook-receiver.py: a receiver that checks every webhook with
/// Python's `standardwebhooks` package, independent of the broker.
struct WebhookReceiverProcess {
    let process: RunningProcess
    let url: String
    let port: Int
    let stateFile: URL

    /// One request the receiver took or refused.
    struct Received: Decodable {
        struct Body: Decodable {
            struct Data: Decodable {
                let ID: String?
                let status: String?
                let device_id: String?
                let public_key: DevicePublicKey?
                let client_user_id: String?
                let signature: String?
            }
            let type: String
            let timestamp: String
            let data: Data
        }
        let name: String
        let id: String?
        let timestamp: Int?
        let signature: String?
        let body: Body?
        let raw: String
        let verified: Bool
        let refused: String?
        let answered: Int
    }

    static func start(port: Int? = nil, stateFile: URL? = nil) async throws -> WebhookReceiverProcess {
        let state = try stateFile ?? temporaryDirectory("webhook-receiver").appendingPathComponent("state.json")
        let process = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", scriptsDirectory.appendingPathComponent("webhook-receiver.py").path, "--state", state.path,
                "--port", String(port ?? 0),
            ])
        let url = try await process.waitFor(#"listening on (http://127\.0\.0\.1:\d+)"#, timeout: .seconds(60))
        return WebhookReceiverProcess(
            process: process, url: url, port: Int(url.split(separator: ":").last!)!, stateFile: state)
    }

    /// The same receiver started again after `stop()`.
    func restarted() async throws -> WebhookReceiverProcess {
        try await Self.start(port: port, stateFile: stateFile)
    }

    func stop() { process.stop() }

    /// Where the broker posts messages for the endpoint `name`.
    func endpoint(_ name: String) -> String { "\(url)/hooks/\(name)" }

    /// The secrets `name`'s messages are checked with (any one verifies),
    /// and optionally the status it answers a verified message with.
    func configure(_ name: String, secrets: [String], status: Int? = nil) async throws {
        var body: [String: Any] = ["secrets": secrets]
        if let status { body["status"] = status }
        try await call(.POST, "/control/endpoints/\(name)", body: body)
    }

    /// From now on, verified messages to `name` are answered with `status`
    /// (0: taken, and never answered).
    func answer(_ name: String, with status: Int) async throws {
        try await call(.POST, "/control/endpoints/\(name)/status", body: ["status": status])
    }

    func received(_ name: String? = nil) async throws -> [Received] {
        let data = try await call(.GET, "/control/received" + (name.map { "?name=\($0)" } ?? ""))
        return try JSONDecoder().decode([Received].self, from: data)
    }

    /// Waits (generously: a busy machine, and retries seconds apart) until
    /// what arrived satisfies `done`.
    func waitUntil(
        _ what: String, name: String? = nil, timeout: Duration = .seconds(120), _ done: ([Received]) -> Bool
    ) async throws -> [Received] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let received = try await received(name)
            if done(received) { return received }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ProcessFailure(
            "the receiver never saw \(what); it has: \(try await received(name).map { "\($0.body?.type ?? "?") \($0.answered) \($0.refused ?? "")" })"
        )
    }

    @discardableResult
    private func call(_ method: HTTPMethod, _ path: String, body: [String: Any]? = nil) async throws -> Data {
        var request = HTTPClientRequest(url: url + path)
        request.method = method
        if let body { request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body))) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 16 << 20)
        guard response.status == .ok else {
            throw ProcessFailure("the receiver answered \(response.status): \(String(buffer: bytes))")
        }
        return Data(bytes.readableBytesView)
    }
}
