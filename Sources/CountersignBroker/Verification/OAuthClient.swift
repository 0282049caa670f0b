import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird

/// An OAuth error answer (RFC 6749 §5.2; CIBA Core §11, §13): a code, a
/// sentence, and the status the code calls for.
struct OAuthError: Error, Encodable, Sendable {
    let error: String
    let errorDescription: String
    let status: HTTPResponse.Status
    let retryAfter: Int?

    enum CodingKeys: String, CodingKey {
        case error
        case errorDescription = "error_description"
    }

    init(_ error: String, _ description: String, status: HTTPResponse.Status? = nil, retryAfter: Int? = nil) {
        self.error = error
        self.errorDescription = description
        self.status = status ?? (error == "invalid_client" ? .unauthorized : .badRequest)
        self.retryAfter = retryAfter
    }

    /// Never cached, as RFC 6749 §5.1 asks of every token answer.
    static let headers: HTTPFields = [.cacheControl: "no-store", HTTPField.Name("Pragma")!: "no-cache"]

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = Self.headers
        if status == .unauthorized { headers[.wwwAuthenticate] = #"Basic realm="countersign""# }
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return try JSONBody(self, status: status, headers: headers).response(from: request, context: context)
    }
}

/// The client of an OAuth request: an API key, authenticated with its
/// secret (`client_secret_basic` or `client_secret_post`) or named by
/// `client_id` alone, as a public client of the hosted page's flow is.
struct OAuthClient {
    let key: APIKey
    /// Whether it proved it holds the secret.
    let authenticated: Bool

    /// The client a request's `Authorization: Basic` header or its form's
    /// `client_id` (and `client_secret`) names. One method at a time.
    static func identify(
        _ request: Request, clientID: String?, clientSecret: String?, in environment: BrokerEnvironment
    ) async throws -> OAuthClient {
        var id = clientID
        var secret = clientSecret
        if let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("basic ") {
            guard clientSecret == nil else {
                throw OAuthError("invalid_request", "authenticate with one method: Basic or client_secret, not both")
            }
            let encoded = authorization.dropFirst("basic ".count).trimmingCharacters(in: .whitespaces)
            guard let data = Data(base64Encoded: encoded), let text = String(data: data, encoding: .utf8),
                let colon = text.firstIndex(of: ":")
            else { throw OAuthError("invalid_client", "Basic credentials must be base64 of client_id:client_secret") }
            // RFC 6749 §2.3.1: both are form-encoded inside the header.
            let basicID = String(text[..<colon]).removingPercentEncoding ?? String(text[..<colon])
            guard clientID == nil || clientID == basicID else {
                throw OAuthError("invalid_client", "client_id differs from the authenticated client")
            }
            id = basicID
            let rest = String(text[text.index(after: colon)...])
            secret = rest.removingPercentEncoding ?? rest
        }
        guard let id, !id.isEmpty, let key = try await environment.store.apiKey(id: id), key.revokedAt == nil else {
            throw OAuthError("invalid_client", "client_id is missing or unknown")
        }
        guard let secret else { return OAuthClient(key: key, authenticated: false) }
        // The current secret, or one a rotation replaced, during its overlap.
        guard key.secret(SecretToken.digest(secret), at: environment.now()) != .refused else {
            throw OAuthError("invalid_client", "the client secret is wrong")
        }
        return OAuthClient(key: key, authenticated: true)
    }
}
