import CountersignCore
import Foundation
import Hummingbird

/// The user a path names.
extension Parameters {
    /// The `:user` path parameter, validated.
    func userID() throws -> String {
        guard let user = self.get("user")?.removingPercentEncoding, ClientUserID.isValid(user) else {
            throw APIError.badRequest("invalid client_user_id in the path")
        }
        return user
    }
}
