import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import Synchronization

/// What every request goes through before its route: the client's address
/// behind trusted proxies, the caller's identity where the route is
/// authenticated (``CallerAuthenticator``), HTTP metrics, errors mapped to
/// ``APIError`` responses (``ErrorMapper``), and one access-log line.
///
/// One middleware rather than five, and none of it awaited in a frame of its
/// own: each middleware layer costs async frames, and a held long-poll keeps
/// those of its connection for as long as it is held (see
/// docs/benchmarks.md).
struct RequestLifecycleMiddleware: RouterMiddleware {
    typealias Context = BrokerRequestContext
    let trustedProxies: TrustedProxies
    let metrics: HTTPMetrics
    /// Set on the authenticated API only.
    var authenticator: CallerAuthenticator? = nil
    /// Set on the router's own instance, which sees only the requests no
    /// route matched: a path that exists under other methods is a 405.
    var routeMethods: RouteMethods? = nil
    /// How the group's errors are written (OAuth's endpoints: `.oauth`).
    var errorForm: APIError.Form = .api

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        context.forwardedAddress = trustedProxies.forwardedClient(peer: context.remoteAddress, headers: request.headers)
        let started = metrics.started(request.method)
        do {
            if let authenticator {
                context.identity = try await authenticator.identify(request, context: context)
            }
            if let allowed = routeMethods?.allowed(on: request.uri.path), !allowed.isEmpty {
                throw APIError.methodNotAllowed(request.method, allowed: allowed)
            }
            let response = try await next(request, context)
            answered(request, response.status, started: started, context: context)
            return response
        } catch {
            throw failed(request, error, started: started, context: context)
        }
    }

    @inline(never)
    private func answered(
        _ request: Request, _ status: HTTPResponse.Status, started: ContinuousClock.Instant, context: Context
    ) {
        let elapsed = ContinuousClock.now - started
        AccessLog.record(request, status: status.code, elapsed: elapsed, context: context)
        metrics.answered(request, status, route: context.endpointPath ?? "Unknown", elapsed: elapsed)
    }

    /// The error as the API answers it, logged and counted.
    @inline(never)
    private func failed(_ request: Request, _ error: any Error, started: ContinuousClock.Instant, context: Context)
        -> APIError
    {
        let error = ErrorMapper.apiError(for: error, context: context, form: errorForm)
        AccessLog.record(request, status: error.status.code, elapsed: ContinuousClock.now - started, context: context)
        metrics.failed(request, error.status, route: context.endpointPath ?? "NotFound")
        return error
    }
}

/// The HTTP metrics of Hummingbird's `MetricsMiddleware`, with its names and
/// labels (`hb.requests`, `hb.request.errors`, `http.server.request.duration`,
/// `http.server.active_requests`), recorded by ``RequestLifecycleMiddleware``
/// rather than by a middleware layer of their own.
final class HTTPMetrics: Sendable {
    private struct Outcome: Hashable {
        let route: String
        let method: String
        let status: HTTPResponse.Status
    }

    private struct Recorders: Sendable {
        let requests: CoreMetrics.Counter
        let duration: CoreMetrics.Timer
        let errors: CoreMetrics.Counter
    }

    private let recorders = Mutex<[Outcome: Recorders]>([:])
    private let meters = Mutex<[String: Meter]>([:])

    /// The methods counted by name; any other (a client may send any
    /// token) is counted as `_OTHER`, as OpenTelemetry's conventions say,
    /// so that clients cannot grow the series, or this process's memory,
    /// without bound.
    private static let knownMethods: Set<String> = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT",
    ]

    /// The `http.request.method` label of `method`.
    static func methodLabel(_ method: HTTPRequest.Method) -> String {
        knownMethods.contains(method.rawValue) ? method.rawValue : "_OTHER"
    }

    /// Counts a request as being answered, from now.
    @inline(never)
    func started(_ method: HTTPRequest.Method) -> ContinuousClock.Instant {
        meter(method).increment()
        return .now
    }

    /// Counts a response and the time it took to make.
    func answered(_ request: Request, _ status: HTTPResponse.Status, route: String, elapsed: Duration) {
        let recorders = self.recorders(Outcome(route: route, method: Self.methodLabel(request.method), status: status))
        recorders.requests.increment()
        recorders.duration.record(duration: elapsed)
        meter(request.method).decrement()
    }

    /// Counts a request that failed with `status`.
    func failed(_ request: Request, _ status: HTTPResponse.Status, route: String) {
        let recorders = self.recorders(Outcome(route: route, method: Self.methodLabel(request.method), status: status))
        recorders.requests.increment()
        recorders.errors.increment()
        meter(request.method).decrement()
    }

    /// The requests of `method` being answered (kept by value in no frame:
    /// a meter is larger than the lookup).
    private func meter(_ method: HTTPRequest.Method) -> Meter {
        let label = Self.methodLabel(method)
        return meters.withLock { meters in
            if let meter = meters[label] { return meter }
            let meter = Meter(label: "http.server.active_requests", dimensions: [("http.request.method", label)])
            meters[label] = meter
            return meter
        }
    }

    private func recorders(_ outcome: Outcome) -> Recorders {
        recorders.withLock { recorders in
            if let existing = recorders[outcome] { return existing }
            let route = ("http.route", outcome.route)
            let method = ("http.request.method", outcome.method)
            let status = String(outcome.status.code)
            let made = Recorders(
                requests: CoreMetrics.Counter(
                    label: "hb.requests", dimensions: [route, method, ("http.response.status_code", status)]),
                duration: CoreMetrics.Timer(
                    label: "http.server.request.duration",
                    dimensions: [route, method, ("http.response.status_code", status)],
                    preferredDisplayUnit: .seconds),
                errors: CoreMetrics.Counter(
                    label: "hb.request.errors", dimensions: [route, method, ("error.type", status)]))
            recorders[outcome] = made
            return made
        }
    }
}

/// One log line per request, when it is answered: method, path (never the
/// query string, which may carry codes), status, duration, and the request
/// id that every other line of the request carries too.
enum AccessLog {
    /// `error` only for a failure of the broker itself (500); other 5xx
    /// answers are conditions it expects and explains (a feature not
    /// configured, shutting down, a store outage logged where it happens).
    static func level(status: Int) -> Logger.Level {
        status == 500 ? .error : status > 500 ? .notice : .info
    }

    @inline(never)
    static func record(_ request: Request, status: Int, elapsed: Duration, context: some RequestContext) {
        context.logger.log(
            level: level(status: status), "request",
            metadata: [
                "http.method": .string(request.method.rawValue), "http.path": .string(request.uri.path),
                "http.status": .stringConvertible(status),
                "http.duration_ms": .string(milliseconds(elapsed)),
            ], source: "CountersignBroker")
    }

    /// Milliseconds with two decimals (truncated), without Foundation's
    /// `String(format:)`, which took a fifth of the time of logging a line.
    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let hundredths = seconds * 100_000 + attoseconds / 10_000_000_000_000
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
