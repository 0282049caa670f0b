import Foundation
import Hummingbird

extension Request {
    /// The query parameter `name` as a search filter: nil when it is
    /// missing or empty, any other text as given.
    func filter(_ name: String) -> String? {
        guard let value = uri.queryParameters[name[...]], !value.isEmpty else { return nil }
        return String(value)
    }

    /// The query parameter `name` as an RFC 3339 time, or nil when it is
    /// missing; a 400 for anything else (an empty one too).
    func time(_ name: String) throws -> Date? {
        guard let given = uri.queryParameters[name[...]] else { return nil }
        let text = String(given).uppercased()
        guard
            let date = (try? Date(text, strategy: .iso8601))
                ?? (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
        else {
            throw APIError.badRequest("\(name) must be an RFC 3339 time, e.g. 2026-11-26T14:03:00Z")
        }
        return date
    }
}
