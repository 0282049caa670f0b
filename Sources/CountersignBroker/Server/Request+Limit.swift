import Hummingbird

extension Request {
    /// `?limit=N`, 1 to 200, 50 by default.
    func limit() throws -> Int {
        guard let text = uri.queryParameters["limit"] else { return 50 }
        guard let parsed = Int(text), (1...200).contains(parsed) else {
            throw APIError.badRequest("limit must be between 1 and 200")
        }
        return parsed
    }
}
