import CountersignCore
import Foundation
public import HTTPTypes
public import Hummingbird

/// Every error the API answers with: a status, a stable code and a message,
/// as a JSON ``ErrorDocument``. All other errors are mapped to one of these
/// in ``ErrorMapper``, in one place.
public struct APIError: HTTPResponseError, Equatable {
    public let status: HTTPResponse.Status
    /// Machine-readable code, e.g. `invalid_proof`.
    public let code: String
    public let message: String
    /// Extra headers, e.g. `Retry-After`.
    public var headers: HTTPFields = [:]

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = try WireCoding.encoder().encode(ErrorDocument(error: code, message: message))
        var headers = self.headers
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    static func unauthorized(_ message: String) -> Self {
        Self(.unauthorized, "unauthorized", message, headers: [.wwwAuthenticate: #"Basic realm="countersign""#])
    }
    static func badRequest(_ message: String, code: String = "invalid_request") -> Self {
        Self(.badRequest, code, message)
    }
    static func notFound(_ message: String) -> Self { Self(.notFound, "not_found", message) }
    static func forbidden(_ code: String, _ message: String) -> Self { Self(.forbidden, code, message) }
    static func conflict(_ code: String, _ message: String) -> Self { Self(.conflict, code, message) }
    static var deviceRevoked: Self {
        Self(.unauthorized, "device_revoked", "this device was removed from the account")
    }
}
