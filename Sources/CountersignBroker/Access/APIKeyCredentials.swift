import CountersignCore
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird

/// API key credentials from `API_KEY_ID`/`API_SECRET_KEY` or HTTP Basic.
struct APIKeyCredentials: Equatable {
    var id: String
    var secret: String?

    /// nil when the request carries no API key at all.
    init?(headers: HTTPFields) throws {
        if let authorization = headers[.authorization], authorization.lowercased().hasPrefix("basic ") {
            let encoded = authorization.dropFirst("basic ".count).trimmingCharacters(in: .whitespaces)
            guard let data = Data(base64Encoded: encoded), let text = String(data: data, encoding: .utf8),
                let colon = text.firstIndex(of: ":")
            else {
                throw APIError.unauthorized("Basic credentials must be base64 of id:secret")
            }
            id = String(text[..<colon])
            secret = String(text[text.index(after: colon)...])
        } else if let keyID = headers[.apiKeyID] {
            id = keyID
            secret = headers[.apiSecretKey]
        } else {
            return nil
        }
        guard !id.isEmpty else { throw APIError.unauthorized("empty API key id") }
        if secret?.isEmpty == true { secret = nil }
    }
}
