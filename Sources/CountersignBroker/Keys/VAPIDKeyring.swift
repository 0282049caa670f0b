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
    private let keys: Mutex<[VAPIDKey]>

    private init(store: any CountersignStore, keys: [VAPIDKey]) {
        self.store = store
        self.keys = Mutex(keys)
    }

    /// Loads the keys, creating the first one if there is none.
    public static func load(from store: any CountersignStore, now: Date, logger: Logger? = nil) async throws
        -> VAPIDKeyring
    {
        if try await store.vapidKeys().isEmpty {
            let key = newKey(now: now)
            do {
                try await store.insertVAPIDKey(key)
                logger?.notice("created the broker's first VAPID key for Web Push, \(key.id), kept in the store")
            } catch let error as StoreError where error.code == .alreadyExists {
                // Another instance starting at the same moment made one.
            }
        }
        let keyring = VAPIDKeyring(store: store, keys: [])
        try await keyring.reload()
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
        try await reload()
        guard let newest = keys.withLock({ $0.last }) else { throw StoreError(.notFound, "no VAPID key") }
        return newest
    }

    /// The key with this id; read again from the store if it is not known
    /// yet (a rotation by another process). Nil if there is none.
    public func key(id: String) async throws -> VAPIDKey? {
        if let known = keys.withLock({ $0.first { $0.id == id } }) { return known }
        try await reload()
        return keys.withLock { $0.first { $0.id == id } }
    }

    private func reload() async throws {
        let fresh = try await store.vapidKeys().map { try VAPIDKey(id: $0.id, pem: $0.privateKeyPEM) }
        keys.withLock { $0 = fresh }
    }
}
