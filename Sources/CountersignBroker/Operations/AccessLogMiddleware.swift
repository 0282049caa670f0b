import Foundation
import Hummingbird
import Logging

/// One log line per request, when it is answered: method, path (never the
/// query string, which may carry codes), status, duration, and the request
/// id that every other line of the request carries too.
struct AccessLogMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let started = ContinuousClock.now
        do {
            let response = try await next(request, context)
            log(request, status: response.status.code, started: started, context: context)
            return response
        } catch let error as any HTTPResponseError {
            log(request, status: error.status.code, started: started, context: context)
            throw error
        } catch {
            log(request, status: 500, started: started, context: context)
            throw error
        }
    }

    private func log(_ request: Request, status: Int, started: ContinuousClock.Instant, context: Context) {
        let elapsed = ContinuousClock.now - started
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        context.logger.log(
            level: status >= 500 ? .error : .info, "request",
            metadata: [
                "http.method": .string(request.method.rawValue), "http.path": .string(request.uri.path),
                "http.status": .stringConvertible(status),
                "http.duration_ms": .string(String(format: "%.2f", milliseconds)),
            ])
    }
}
