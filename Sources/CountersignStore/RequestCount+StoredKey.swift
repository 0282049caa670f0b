public import CountersignCore

extension RequestCount {
    /// A user's key as the stores keep it (their counters in
    /// `request_counts`, PostgreSQL's lock on their events): their app's
    /// API key id and their user id, a line apart. Neither holds a line
    /// break, so no two users share one.
    public static func storedKey(issuer: String, clientUserID: String) -> String { issuer + "\n" + clientUserID }

    /// A counter as the stores keep it in `request_counts`: a user's key is
    /// ``storedKey(issuer:clientUserID:)``; an address's is the address.
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
