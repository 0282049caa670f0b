import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird

/// API key credentials from `API_KEY_ID`/`API_SECRET_KEY` or HTTP Basic.
struct APIKeyCredentials: Equatable {
    var id: String
    var secret: String?

    init(id: String, secret: String?) {
        self.id = id
        self.secret = secret?.isEmpty == true ? nil : secret
    }

    /// nil when the request carries no API key at all.
    init?(headers: HTTPFields) throws {
        if let basic = try Self(basic: headers[.authorization]) {
            self = basic
        } else if let keyID = headers[.apiKeyID] {
            self.init(id: keyID, secret: headers[.apiSecretKey])
        } else {
            return nil
        }
        guard !id.isEmpty else { throw APIError.unauthorized("empty API key id") }
    }

    /// The credentials of an `Authorization: Basic` header, or nil for
    /// another scheme or none. The one parser of Basic: the API and OAuth's
    /// clients (`client_secret_basic`) send the same, and as RFC 6749
    /// §2.3.1 asks, both parts are read form-encoded (`%3A` is a colon).
    init?(basic authorization: String?) throws {
        guard let authorization, authorization.lowercased().hasPrefix("basic ") else { return nil }
        let encoded = authorization.dropFirst("basic ".count).trimmingCharacters(in: .whitespaces)
        guard let data = Data(base64Encoded: encoded), let text = String(data: data, encoding: .utf8),
            let colon = text.firstIndex(of: ":")
        else {
            throw APIError.unauthorized("Basic credentials must be base64 of id:secret")
        }
        let id = String(text[..<colon])
        let secret = String(text[text.index(after: colon)...])
        self.init(id: id.removingPercentEncoding ?? id, secret: secret.removingPercentEncoding ?? secret)
    }
}
