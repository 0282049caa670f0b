import CountersignCore
import CountersignStore
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

/// What operators and their load balancers ask.
struct OperationsController {
    let environment: BrokerEnvironment

    var endpoints: RouteCollection<BrokerRequestContext> {
        RouteCollection(context: BrokerRequestContext.self)
            .get("healthz", use: health)
            .get("readyz", use: ready)
            .get("metrics", use: metrics)
    }

    /// The process is up, and which release it runs.
    @Sendable func health(_ request: Request, context: BrokerRequestContext) async throws -> JSONBody<[String: String]>
    {
        JSONBody(["status": "ok", "version": CountersignVersion.current])
    }

    /// The store answers (migrations ran before the server started) and the
    /// broker is not shutting down: send it traffic. A store reached over
    /// the network is asked with a deadline (``readinessDeadline``), and not
    /// at all while it is known to be unreachable: the answer comes within
    /// a second either way.
    @Sendable func ready(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        guard !Task.isShuttingDownGracefully else {
            return try APIError(.serviceUnavailable, .shuttingDown, "the broker is shutting down")
                .response(from: request, context: context)
        }
        var failure: String? = nil
        if let remote = environment.store as? any StoreHealthReporting {
            if !(await remote.probe(within: Self.readinessDeadline)) {
                failure = "no answer within \(Self.readinessDeadline)"
            }
        } else {
            do {
                // A primary-key read of nothing: the store answers, no secret travels.
                _ = try await environment.store.apiKey(id: "")
            } catch {
                failure = "\(error)"
            }
        }
        if let failure {
            context.logger.warning("readiness check: the store does not answer", metadata: ["error": "\(failure)"])
            return try APIError(
                .serviceUnavailable, .storeUnavailable, "the store does not answer",
                headers: [.retryAfter: String(ErrorMapper.storeRetryAfter)]
            ).response(from: request, context: context)
        }
        return try JSONBody(["status": "ready"]).response(from: request, context: context)
    }

    static let readinessDeadline: Duration = .milliseconds(800)

    /// Prometheus text exposition.
    @Sendable func metrics(_ request: Request, context: BrokerRequestContext) async throws -> Response {
        let store = (environment.store as? any StoreHealthReporting)?.health
        guard let text = environment.metrics.render(longPollsHeld: environment.hub.held, store: store) else {
            throw APIError.notFound("this broker exports no metrics")
        }
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
