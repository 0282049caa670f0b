import CountersignCore
import Foundation
public import HTTPTypes
public import Hummingbird

/// Every error the API answers with: a status, a stable code and a message,
/// as a JSON ``ErrorDocument``. All other errors are mapped to one of these
/// in ``ErrorMapper``, in one place.
public struct APIError: HTTPResponseError, Equatable {
    public let status: HTTPResponse.Status
    /// Machine-readable code, e.g. `invalid_proof`: one of ``ErrorCode``.
    public let code: ErrorCode
    public let message: String
    /// Extra headers, e.g. `Retry-After`.
    public var headers: HTTPFields = [:]
    /// The document it is written as.
    public var form: Form = .api

    /// How an error is written: every route group answers in one form.
    public enum Form: Sendable, Equatable {
        /// `{"error": code, "message": …}` (``ErrorDocument``).
        case api
        /// OAuth's `{"error": code, "error_description": …}` (RFC 6749
        /// §5.2), never cached, with a Basic challenge on 401.
        case oauth
    }

    public init(_ status: HTTPResponse.Status, _ code: ErrorCode, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        let body: Data
        switch form {
        case .api:
            body = try WireCoding.encoder().encode(ErrorDocument(error: code.rawValue, message: message))
        case .oauth:
            body = try WireCoding.encoder().encode(OAuthErrorDocument(error: code.rawValue, errorDescription: message))
            headers.append(contentsOf: HTTPFields.oauthNoStore)
            if status == .unauthorized, headers[.wwwAuthenticate] == nil {
                headers[.wwwAuthenticate] = #"Basic realm="countersign""#
            }
        }
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// An OAuth error (RFC 6749 §5.2; CIBA Core §11, §13): `invalid_client`
    /// is a 401, the others a 400 unless `status` says otherwise.
    static func oauth(
        _ code: ErrorCode, _ description: String, status: HTTPResponse.Status? = nil, retryAfter: Int? = nil
    ) -> Self {
        var error = Self(
            status ?? (code == .invalidClient ? .unauthorized : .badRequest), code, description,
            headers: retryAfter.map { [.retryAfter: String($0)] } ?? [:])
        error.form = .oauth
        return error
    }

    static func unauthorized(_ message: String) -> Self {
        Self(.unauthorized, .unauthorized, message, headers: [.wwwAuthenticate: #"Basic realm="countersign""#])
    }
    /// The console's 401: a cookie, not credentials a browser should ask
    /// the person for (no `WWW-Authenticate`, which opens a password dialog).
    static func notSignedIn(_ message: String) -> Self { Self(.unauthorized, .notSignedIn, message) }
    static func badRequest(_ message: String, code: ErrorCode = .invalidRequest) -> Self {
        Self(.badRequest, code, message)
    }
    /// A signed object refused for `error`, named by `code`
    /// (`invalid_decision`, `invalid_passkey`) with the reason first.
    static func invalid(_ code: ErrorCode, _ error: ProtocolError) -> Self {
        Self(.badRequest, code, "\(error.code.rawValue): \(error.message)")
    }
    static func notFound(_ message: String) -> Self { Self(.notFound, .notFound, message) }
    static func forbidden(_ code: ErrorCode, _ message: String) -> Self { Self(.forbidden, code, message) }
    static func conflict(_ code: ErrorCode, _ message: String) -> Self { Self(.conflict, code, message) }
    static var deviceRevoked: Self {
        Self(.unauthorized, .deviceRevoked, "this device was removed from the account")
    }
}

/// The body of an OAuth error answer.
private struct OAuthErrorDocument: Encodable {
    let error: String
    let errorDescription: String

    enum CodingKeys: String, CodingKey {
        case error
        case errorDescription = "error_description"
    }
}

extension HTTPFields {
    /// Never cached, as RFC 6749 §5.1 asks of every token answer.
    static let oauthNoStore: HTTPFields = [.cacheControl: "no-store", HTTPField.Name("Pragma")!: "no-cache"]
}
