import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// scripts/push-service.py: a Web Push service on loopback written with
/// Python's http_ece and py_vapid, which checks every push's VAPID token
/// against the broker's published key and decrypts its payload.
struct PushServiceProcess {
    let process: RunningProcess
    let url: String
    let port: Int
    let stateFile: URL
    let broker: String

    /// A subscription as the push service hands it out.
    struct Subscription: Decodable {
        let id: String
        let endpoint: String
        let p256dh: String
        let auth: String
    }

    /// One push the service took (or refused, with why).
    struct Received: Decodable {
        struct Claims: Decodable {
            let aud: String
            let exp: Double
            let sub: String
        }
        struct Payload: Decodable, Equatable {
            let type: String
            let event_id: String
            let app: String
            let title: String
            let expires_at: String
        }
        let subscription: String
        let ttl: String?
        let urgency: String?
        let status: Int
        let refused: String?
        let vapid: Claims?
        let payload: Payload?
    }

    /// Starts the service for `broker`, on `port` (a free one if nil) and
    /// with `stateFile` (a new one if nil): the same port and file continue
    /// a service that was stopped.
    static func start(broker: String, port: Int? = nil, stateFile: URL? = nil) async throws -> PushServiceProcess {
        let state = try stateFile ?? temporaryDirectory("push-service").appendingPathComponent("state.json")
        let process = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", scriptsDirectory.appendingPathComponent("push-service.py").path, "--broker", broker,
                "--state", state.path, "--port", String(port ?? 0),
            ])
        let url = try await process.waitFor(#"listening on (http://127\.0\.0\.1:\d+)"#, timeout: .seconds(60))
        return PushServiceProcess(
            process: process, url: url, port: Int(url.split(separator: ":").last!)!, stateFile: state,
            broker: broker)
    }

    /// The same service started again after `stop()`.
    func restarted() async throws -> PushServiceProcess {
        try await Self.start(broker: broker, port: port, stateFile: stateFile)
    }

    func stop() { process.stop() }

    func subscribe() async throws -> Subscription {
        try await call(.POST, "/control/subscriptions", as: Subscription.self)
    }

    /// From now on, pushes to the subscription are answered with `status`.
    func answer(_ subscription: Subscription, with status: Int) async throws {
        struct Empty: Decodable {}
        _ = try await call(
            .POST, "/control/subscriptions/\(subscription.id)/status", body: #"{"status":\#(status)}"#,
            as: Empty.self)
    }

    func received() async throws -> [Received] {
        try await call(.GET, "/control/received", as: [Received].self)
    }

    /// The decrypted payloads as the service read them, every member kept.
    func rawPayloads() async throws -> [[String: String]] {
        struct Raw: Decodable { let payload: [String: String]? }
        return try await call(.GET, "/control/received", as: [Raw].self).compactMap(\.payload)
    }

    /// Waits (generously: a busy machine) until what arrived satisfies `done`.
    func waitUntil(
        _ what: String, timeout: Duration = .seconds(90), _ done: ([Received]) -> Bool
    ) async throws -> [Received] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let received = try await received()
            if done(received) { return received }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ProcessFailure("the push service never saw \(what); it has: \(try await received())")
    }

    private func call<T: Decodable>(_ method: HTTPMethod, _ path: String, body: String? = nil, as _: T.Type)
        async throws -> T
    {
        var request = HTTPClientRequest(url: url + path)
        request.method = method
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 16 << 20)
        return try JSONDecoder().decode(T.self, from: Data(bytes.readableBytesView))
    }
}
