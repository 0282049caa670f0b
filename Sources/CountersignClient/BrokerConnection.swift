public import AsyncHTTPClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1

/// HTTP to one broker: JSON in, JSON out, broker errors as ``CountersignError``.
public struct BrokerConnection: Sendable {
    /// The broker's base URL, e.g. `http://127.0.0.1:8080`.
    public let baseURL: String
    private let client: HTTPClient

    /// A connection over the process-wide HTTP client of this SDK, which
    /// keeps up to 512 connections per broker, so that many long-polls can
    /// be held at once.
    public init(baseURL: String) {
        self.init(baseURL: baseURL, client: Self.sharedClient)
    }

    /// A connection over your own HTTP client.
    public init(baseURL: String, client: HTTPClient) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.client = client
    }

    /// Long-polls hold a connection each: the process-wide client of
    /// AsyncHTTPClient keeps only 8 per host.
    static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 512
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// The absolute URL of an API path.
    public func url(_ path: String) -> String { baseURL + path }

    /// Sends a request and decodes a 2xx JSON answer.
    func send<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, headers: [(String, String)] = [], body: (some Encodable)? = Empty?.none,
        timeout: TimeInterval = 30, as _: Response.Type
    ) async throws -> Response {
        var request = HTTPClientRequest(url: url(path))
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.headers.add(name: "Accept", value: "application/json")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try WireCoding.encoder().encode(body)))
        }
        let response: HTTPClientResponse
        let payload: ByteBuffer
        do {
            response = try await client.execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
            payload = try await response.body.collect(upTo: 4 * 1024 * 1024)
        } catch {
            throw CountersignError(
                status: 0, code: "unreachable", message: "cannot reach the broker at \(baseURL): \(error)")
        }
        let data = Data(payload.readableBytesView)
        guard (200..<300).contains(response.status.code) else {
            let document = try? WireCoding.decoder().decode(ErrorDocument.self, from: data)
            throw CountersignError(
                status: Int(response.status.code), code: document?.error ?? "http_\(response.status.code)",
                message: document?.message ?? "the broker answered \(response.status)",
                retryAfter: response.headers.first(name: "Retry-After").flatMap { Int($0) })
        }
        do {
            return try WireCoding.decoder().decode(Response.self, from: data)
        } catch {
            throw CountersignError(
                status: Int(response.status.code), code: "bad_response",
                message: "the broker's answer could not be read: \(error)")
        }
    }

    /// Whether the broker answers its health check.
    public func health() async throws -> Bool {
        struct Health: Decodable { let status: String }
        return try await send(.GET, "/healthz", timeout: 5, as: Health.self).status == "ok"
    }

    /// An empty body type for requests without one.
    struct Empty: Encodable {}
}
