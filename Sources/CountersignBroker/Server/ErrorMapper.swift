import CountersignCore
import CountersignStore
import HTTPTypes
import Hummingbird
import Logging
import NIOHTTP1

/// Turns every error a handler throws into an ``APIError`` JSON response:
/// bad input is a clear 4xx, an unexpected failure a 500 without details.
/// ``RequestLifecycleMiddleware`` applies it to every route.
enum ErrorMapper {
    static func apiError(for error: any Error, context: some RequestContext) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as ProtocolError:
            return APIError(.badRequest, ErrorCode(error.code), error.message)
        case let error as StoreError:
            return map(error, context: context)
        case let error as HTTPError:
            return APIError(error.status, code(for: error.status), error.body ?? error.status.reasonPhrase)
        case is HTTPParserError:
            // The body's framing broke while a handler read it (a chunk
            // size that overflows, say): the client's fault, and nothing
            // after it on the connection can be trusted.
            return APIError(
                .badRequest, .malformedRequest, "the request's framing cannot be read",
                headers: [.connection: "close"])
        case let error as any HTTPResponseError:
            return APIError(error.status, code(for: error.status), message(for: error.status, context: context))
        default:
            context.logger.error("unexpected error", metadata: ["error": "\(String(reflecting: error))"])
            return APIError(.internalServerError, .internalError, "the broker failed to handle this request")
        }
    }

    /// The error as a route group that answers in `form` writes it. On the
    /// OAuth endpoints, an error that is not one of OAuth's own is told in
    /// its terms: a failed authentication is `invalid_client` (401), any
    /// other refusal `invalid_request` (400); the broker's own failures
    /// (5xx) keep the API's form.
    static func apiError(for error: any Error, context: some RequestContext, form: APIError.Form) -> APIError {
        let error = apiError(for: error, context: context)
        guard form == .oauth, error.form != .oauth, error.status.code < 500 else { return error }
        var told =
            error.status == .unauthorized
            ? APIError.oauth(.invalidClient, error.message) : .oauth(.invalidRequest, error.message)
        // Its own headers stay (Retry-After, Connection: close).
        told.headers.append(contentsOf: error.headers)
        return told
    }

    static func map(_ error: StoreError, context: some RequestContext) -> APIError {
        switch error.code {
        case .notFound: return .notFound(error.message)
        case .alreadyExists: return .conflict(.alreadyExists, error.message)
        case .replayed: return .conflict(.replayed, error.message)
        case .conflict: return .conflict(.conflict, error.message)
        case .limitReached(let retryAfter):
            return APIError(
                .tooManyRequests, .tooManyPending, error.message, headers: [.retryAfter: String(retryAfter)])
        case .userProtected(let retryAfter):
            return APIError(
                .tooManyRequests, .userProtected, error.message, headers: [.retryAfter: String(retryAfter)])
        case .backend:
            // Expected while the database is away (a restart, a failover):
            // the proxy retries another instance, the client after a pause.
            context.logger.notice("store failed", metadata: ["error": "\(error.message)"])
            return APIError(
                .serviceUnavailable, .storeUnavailable, "the broker's store is unavailable; try again shortly",
                headers: [.retryAfter: String(storeRetryAfter)])
        }
    }

    /// Seconds a client waits before trying again while the store is away.
    static let storeRetryAfter = 2

    static func message(for status: HTTPResponse.Status, context: some RequestContext) -> String {
        status == .contentTooLarge ? "the body is larger than \(context.maxUploadSize) bytes" : status.reasonPhrase
    }

    static func code(for status: HTTPResponse.Status) -> ErrorCode {
        switch status {
        case .contentTooLarge: .bodyTooLarge
        case .unsupportedMediaType: .unsupportedMediaType
        case .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        default: status.code < 500 ? .invalidRequest : .internalError
        }
    }
}
