import CountersignCore

extension UserVerificationPolicy {
    /// The policy a request's `user_verification` names, or a 400 saying
    /// what it may be.
    static func requested(_ given: String) throws -> UserVerificationPolicy {
        guard let policy = UserVerificationPolicy(rawValue: given) else {
            throw APIError.badRequest("user_verification is required or discouraged")
        }
        return policy
    }
}
