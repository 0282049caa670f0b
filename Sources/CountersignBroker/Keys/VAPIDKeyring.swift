public import CountersignCore
public import CountersignSenders
public import CountersignStore
import Crypto
public import Foundation
public import Logging
import Synchronization

/// The broker's VAPID keys (RFC 8292). The newest is given to new push
/// subscriptions; a subscription stays bound to the key it was made with
/// (push services check every message against it), so older keys keep
/// signing for the subscriptions made with them.
public final class VAPIDKeyring: Sendable {
    private let store: any CountersignStore
    /// The keys, and when they were read from the store.
    private let keys: Mutex<(keys: [VAPIDKey], read: Date?)>
    private let now: @Sendable () -> Date

    /// How stale the keys may be: a rotation by `device-broker vapid-key`
    /// reaches new subscriptions within this, and the public key endpoint,
    /// which anyone may call, reads the store at most this often.
    static let refreshInterval: TimeInterval = 30

    private init(store: any CountersignStore, now: @escaping @Sendable () -> Date) {
        self.store = store
        self.keys = Mutex(([], nil))
        self.now = now
    }

    /// Loads the keys, creating the first one if there is none.
    public static func load(
        from store: any CountersignStore, logger: Logger? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> VAPIDKeyring {
        if try await store.vapidKeys().isEmpty {
            let key = newKey(now: now())
            do {
                try await store.insertVAPIDKey(key)
                logger?.notice("created the broker's first VAPID key for Web Push, \(key.id), kept in the store")
            } catch let error as StoreError where error.code == .alreadyExists {
                // Another instance starting at the same moment made one.
            }
        }
        let keyring = VAPIDKeyring(store: store, now: now)
        try await keyring.reload(olderThan: 0)
        return keyring
    }

    /// A new key, named by its public key's RFC 7638 thumbprint as the
    /// signing keys are.
    public static func newKey(now: Date) -> BrokerSigningKey {
        let key = P256.Signing.PrivateKey()
        return BrokerSigningKey(
            id: DevicePublicKey(key.publicKey).thumbprint, privateKeyPEM: key.pemRepresentation, createdAt: now)
    }

    /// The key new subscriptions are made for (the newest).
    public func current() async throws -> VAPIDKey {
        try await reload(olderThan: Self.refreshInterval)
        guard let newest = keys.withLock({ $0.keys.last }) else { throw StoreError(.notFound, "no VAPID key") }
        return newest
    }

    /// The key with this id; read again from the store if it is not known
    /// (a rotation by another process, at most once a second). Nil if there
    /// is none: a retired key.
    public func key(id: String) async throws -> VAPIDKey? {
        if let known = keys.withLock({ $0.keys.first { $0.id == id } }) { return known }
        try await reload(olderThan: 1)
        return keys.withLock { $0.keys.first { $0.id == id } }
    }

    private func reload(olderThan age: TimeInterval) async throws {
        let now = now()
        guard keys.withLock({ $0.read.map { now.timeIntervalSince($0) >= age } ?? true }) else { return }
        let fresh = try await store.vapidKeys().map { try VAPIDKey(id: $0.id, pem: $0.privateKeyPEM) }
        keys.withLock { $0 = (fresh, now) }
    }
}
