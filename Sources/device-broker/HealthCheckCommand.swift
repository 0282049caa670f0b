import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// `device-broker healthcheck`: whether a broker answers its `/healthz`, for
/// a container's health check in an image that has no curl.
struct HealthCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "healthcheck",
        abstract: "Exit 0 if the broker at --url answers GET /healthz with 200; else say why and exit 1.",
        discussion: """
            The container image's HEALTHCHECK. The default URL is where `serve` listens by default; \
            give --url when it listens elsewhere. A redirect is an answer other than 200, never followed.
            """)

    @Option(help: "The broker's base URL; /healthz is asked under it.")
    var url = "http://127.0.0.1:8080"

    @Option(help: "How long the connection and the answer may take together, e.g. 500ms, 3s.")
    var timeout = DurationArgument(seconds: 3)

    func validate() throws {
        guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme),
            parsed.host?.isEmpty == false, parsed.query == nil, parsed.fragment == nil
        else {
            throw ValidationError("--url must be a broker's base URL, such as http://127.0.0.1:8080")
        }
        guard timeout.seconds >= 0.01, timeout.seconds <= 60 else {
            throw ValidationError("--timeout must be between 10ms and 60s")
        }
    }

    func run() async throws {
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        let target = base + "/healthz"
        let deadline = TimeAmount.milliseconds(Int64(timeout.seconds * 1000))
        var configuration = HTTPClient.Configuration()
        // One attempt: a refused connection is reported as such at once, not
        // retried until the deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.redirectConfiguration = .disallow
        configuration.timeout.connect = deadline
        let answer = try await HTTPClient.withHTTPClient(configuration: configuration) { client in
            do {
                let response = try await client.execute(HTTPClientRequest(url: target), timeout: deadline)
                let body = try? await response.body.collect(upTo: 64 * 1024)
                return (status: response.status, body: body)
            } catch {
                throw Unhealthy(reason: "\(target): \(explain(error))")
            }
        }
        guard answer.status == .ok else {
            throw Unhealthy(reason: "\(target) answered \(answer.status.code) \(answer.status.reasonPhrase)")
        }
        let version = answer.body.flatMap {
            try? JSONDecoder().decode([String: String].self, from: Data($0.readableBytesView))["version"]
        }
        print("healthy: \(target) answered 200" + (version.map { " (release \($0))" } ?? ""))
    }

    /// Why the request got no answer, in a few words.
    private func explain(_ error: any Error) -> String {
        let within = String(format: "%g s", timeout.seconds)
        if let failure = error as? NIOConnectionError {
            if let first = failure.connectionErrors.first { return explain(first.error) }
            return "the host name \(failure.host) cannot be resolved"
        }
        if let error = error as? IOError {
            if error.errnoCode == ECONNREFUSED { return "connection refused (is the broker running, on that port?)" }
            return String(cString: strerror(error.errnoCode))
        }
        switch error as? HTTPClientError {
        case .connectTimeout?: return "no connection within \(within)"
        case .deadlineExceeded?, .readTimeout?: return "no answer within \(within)"
        case .remoteConnectionClosed?: return "the connection was closed without an answer"
        default: return "\(error)"
        }
    }

    /// Printed by the argument parser as `Error: unhealthy: …`, with exit
    /// status 1: what a container engine reads as unhealthy.
    struct Unhealthy: Error, CustomStringConvertible {
        let reason: String
        var description: String { "unhealthy: \(reason)" }
    }
}
