/// Names of what long-polls wait on: one event, or one user's inbox.
public enum WakeKey {
    public static func event(_ id: String) -> String { "event:" + id }
    public static func inbox(issuer: String, user: String) -> String { "inbox:\(issuer)\u{1F}\(user)" }
    /// The broker's signing keys changed (a rotation).
    public static let signingKeys = "signing-keys"
    /// The outbox has a message due now (this instance's delivery worker).
    public static let outbox = "outbox"
    /// Every waiter on every instance re-reads the store: sent by an
    /// instance as it starts, for the wakes it may have failed to send
    /// before it stopped.
    public static let resync = "resync"
}

/// A store that several broker instances share tells each of them what
/// changed, so a long-poll held by one instance wakes on a write through
/// another.
public protocol WakeFeed: Sendable {
    /// Runs until cancelled: `wake` gets the ``WakeKey`` of every change
    /// committed by any instance; `resync` is called whenever changes may
    /// have been missed (a lost connection), so that every waiter re-reads
    /// the store. A missed change costs a delay, never a lost decision.
    func followChanges(wake: @escaping @Sendable (String) -> Void, resync: @escaping @Sendable () -> Void)
        async throws
}
