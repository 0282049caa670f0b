public import AsyncHTTPClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// HTTP to one broker: JSON in, JSON out, broker errors as ``CountersignError``.
public struct BrokerConnection: Sendable {
    /// The broker's base URL, e.g. `http://127.0.0.1:8080`.
    public let baseURL: String
    /// Sent as `User-Agent`: the program and its release.
    public let userAgent: String
    /// Sent with every request besides its own headers: a load generator's
    /// `X-Forwarded-For` standing for clients behind a proxy, say.
    public var extraHeaders: [(String, String)] = []
    private let client: HTTPClient

    /// A connection over the process-wide HTTP client of this SDK, which
    /// keeps up to 512 connections per broker, so that many long-polls can
    /// be held at once.
    public init(baseURL: String, userAgent: String = BrokerConnection.defaultUserAgent) {
        self.init(baseURL: baseURL, client: Self.sharedClient, userAgent: userAgent)
    }

    /// A connection over your own HTTP client.
    public init(baseURL: String, client: HTTPClient, userAgent: String = BrokerConnection.defaultUserAgent) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.client = client
        self.userAgent = userAgent
    }

    /// `countersign-client/<release>`.
    public static let defaultUserAgent = "countersign-client/\(CountersignVersion.current)"

    /// Long-polls hold a connection each: the process-wide client of
    /// AsyncHTTPClient keeps only 8 per host.
    ///
    /// A broker that cannot be reached is reported at once: AsyncHTTPClient
    /// would otherwise retry the connection, silently, until the request's
    /// timeout (30 s). The calls that must ride out a restart retry
    /// themselves, saying so (``CountersignClient/awaitOutcome(of:)``).
    static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 512
        configuration.connectionPool.retryConnectionEstablishment = false
        // A redirect is an answer, never followed: its target would get the
        // request's credentials, and a failure there would read as the
        // broker being down.
        configuration.redirectConfiguration = .disallow
        configuration.timeout.connect = .seconds(5)
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
        for (name, value) in extraHeaders + headers { request.headers.add(name: name, value: value) }
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: userAgent)
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try WireCoding.encoder().encode(body)))
        }
        let response: HTTPClientResponse
        let payload: ByteBuffer
        do {
            (response, payload) = try await Self.exchange(request, on: client, within: timeout)
        } catch {
            throw CountersignError(
                status: 0, code: "unreachable",
                message: "cannot reach the broker at \(baseURL): "
                    + Self.explain(error, timeout: timeout, plainHTTP: baseURL.hasPrefix("http:")))
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
                message: "the answer from \(baseURL) is not a Countersign broker's (is the URL right?)")
        }
    }

    /// Sends `request` and reads its whole answer within `timeout`.
    ///
    /// AsyncHTTPClient's deadline ends when the answer's head arrives: a
    /// server (or a proxy) that sends a head and then stalls its body held
    /// the caller for as long as it kept the connection open. The body is
    /// read in a task that a second one cancels at the deadline (the
    /// body's stream ends with an error when its task is cancelled, and
    /// closes the request; ClientDeadlineTests holds that).
    static func exchange(_ request: HTTPClientRequest, on client: HTTPClient, within timeout: TimeInterval)
        async throws -> (HTTPClientResponse, ByteBuffer)
    {
        let limit = TimeAmount.milliseconds(Int64(timeout * 1000))
        let deadline = NIODeadline.now() + limit
        return try await withThrowingTaskGroup(of: (HTTPClientResponse, ByteBuffer)?.self) { group in
            group.addTask {
                let response = try await client.execute(request, deadline: deadline)
                return (response, try await response.body.collect(upTo: 4 * 1024 * 1024))
            }
            group.addTask {
                try await Task.sleep(for: .nanoseconds(limit.nanoseconds))
                throw HTTPClientError.deadlineExceeded
            }
            defer { group.cancelAll() }
            // The first to finish: the exchange, or the deadline's error.
            guard let exchange = try await group.next() ?? nil else { throw HTTPClientError.deadlineExceeded }
            return exchange
        }
    }

    /// Why a request got no answer, in words a person can act on: no
    /// library type names, no errno dumps.
    /// `plainHTTP`: the request went out as plain http, so a reset may be
    /// a TLS server hanging up on it.
    static func explain(_ error: any Error, timeout: TimeInterval, plainHTTP wentPlain: Bool = false) -> String {
        let plainHTTP = "the broker does not speak TLS there; if it serves plain HTTP, use http://"
        if let failure = error as? NIOConnectionError {
            if failure.dnsAError != nil || failure.dnsAAAAError != nil, failure.connectionErrors.isEmpty {
                return "the host name \(failure.host) cannot be resolved"
            }
            if let first = failure.connectionErrors.first {
                return explain(first.error, timeout: timeout, plainHTTP: wentPlain)
            }
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED: return "connection refused (is it running?)"
            case EHOSTUNREACH, ENETUNREACH: return "no route to that host (is the address right?)"
            case ETIMEDOUT: return "the connection timed out"
            // A TLS server answers a request in the clear by closing the
            // connection, at times with a reset (which one depends on timing).
            case ECONNRESET:
                return "the connection was reset" + (wentPlain ? "; if the broker serves https, use https://" : "")
            default: return String(cString: strerror(error.errnoCode)).lowercased()
            }
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout: return "no connection within 5 s (is the host up, and the port open?)"
            case .deadlineExceeded, .readTimeout: return "no answer within \(Int(timeout)) s"
            case .remoteConnectionClosed:
                return "the connection was closed without an answer; if the broker serves https, use https://"
            case .invalidURL, .emptyHost, .emptyScheme:
                return "that is not a URL like http://127.0.0.1:8080"
            case .tlsHandshakeTimeout: return plainHTTP
            default: break
            }
        }
        if error is ChannelError { return "the connection failed" }
        // NIOSSL's errors carry BoringSSL's reason codes in their text.
        let text = String(describing: error)
        if text.contains("CERTIFICATE_VERIFY_FAILED") || text.contains("certificate verify failed")
            || text.contains("unable to get local issuer")
        {
            return "its TLS certificate is not trusted here (self-signed, or from a private CA that is not "
                + "in this machine's trust store)"
        }
        if text.contains("WRONG_VERSION_NUMBER") { return plainHTTP }
        if text.contains("handshake") || text.contains("SSL") { return "the TLS handshake failed" }
        if text.contains("HTTPParserError") || text.contains("invalid") {
            return "the answer is not HTTP; if the broker serves https, use https://"
        }
        return "the connection failed"
    }

    /// Whether the broker answers its health check.
    public func health() async throws -> Bool {
        struct Health: Decodable { let status: String }
        return try await send(.GET, "/healthz", timeout: 5, as: Health.self).status == "ok"
    }

    /// An empty body type for requests without one.
    struct Empty: Encodable {}
}
