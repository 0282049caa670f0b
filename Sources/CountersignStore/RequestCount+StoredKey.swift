public import CountersignCore

extension RequestCount {
    /// A counter as the stores keep it in `request_counts`: a user's key is
    /// their app's API key id and their user id, a line apart; an
    /// address's is the address.
    public init(scope: Scope, storedKey: String, count: Int) {
        if scope == .user, let newline = storedKey.firstIndex(of: "\n") {
            self.init(
                scope: scope, issuer: String(storedKey[..<newline]),
                key: String(storedKey[storedKey.index(after: newline)...]), count: count)
        } else {
            self.init(scope: scope, issuer: nil, key: storedKey, count: count)
        }
    }
}
